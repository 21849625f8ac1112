/**
 * MCP over Streamable HTTP (POST/GET/DELETE /mcp), both protocol eras behind one URL:
 *
 * - 2026-07-28 (modern, stateless): `createMcpHandler` builds a server per request. Cross-request state is
 *   the default sandbox, kept per token (per caller principal) in `statelessDefaults` and labelled with an
 *   owner key derived from it, so that a restarted daemon adopts it again (default-sandbox.ts).
 * - 2025-11-25 and older (legacy): requests are told apart with the SDK's own `isLegacyRequest`. An
 *   `initialize` opens a sessionful `WebStandardStreamableHTTPServerTransport` keyed by `Mcp-Session-Id`
 *   with its own server, default sandbox and engine client session. The table of sessions, its limits and
 *   idle expiry are in http-sessions.ts; what becomes of a session's sandboxes when it ends is the rule of
 *   session-policy.ts (DELETE ends them at once; idle expiry, daemon shutdown and restart leave them the
 *   grace, and the client's next request with its session id resumes the session). Legacy requests without
 *   a session id (clients that never initialize) are served statelessly by the SDK's fallback — as one
 *   plain JSON body when their `Accept` does not list `text/event-stream` (http-plain.ts: the rule that
 *   tells `msb server`-style plain JSON-RPC from Streamable HTTP).
 * - 2024-11-05 HTTP+SSE (`GET /sse` + `POST /messages`): http-sse.ts, its own session table with the
 *   same limits.
 *
 * A session belongs to the tenant that opened it: another tenant presenting its id gets the same 404 as
 * for an unknown id, so session ids cannot be used to probe or hijack other tenants' sessions.
 * Authentication, Host/Origin checks and body limits happen before this handler (protocol/http/app.ts).
 */
import type { AuthInfo, McpRequestContext } from '@modelcontextprotocol/server';
import { createMcpHandler, isLegacyRequest, legacyStatelessFallback } from '@modelcontextprotocol/server';
import type { ForkboxApi } from '../../../service/api.ts';
import { DEFAULT_TENANT } from '../../../service/caller.ts';
import { onResponseDone } from '../../http/limits.ts';
import { createConformanceFixtures } from '../conformance/conformance-fixtures.ts';
import type { ToolLog } from '../kit/tool-kit.ts';
import type { RunnerOptions } from '../kit/tool-runner.ts';
import { createDefaultSandbox, createForkboxMcpServer, type DefaultSandbox } from '../server.ts';
import { cancelOnDisconnect, requestIdsOf } from './http-disconnect.ts';
import { createLegacySessions, type LegacySessionOptions } from './http-legacy.ts';
import { createPlainJsonRpc, isPlainJsonRpc } from './http-plain.ts';
import { DEFAULT_SESSION_LIMITS, type SessionLimits } from './http-sessions.ts';
import { createSseSessions } from './http-sse.ts';
import { DEFAULT_SESSION_GRACE_MS, defaultSandboxOwner } from './session-policy.ts';

export interface McpCaller {
  tenant: string;
  /** Stable per token: keys the stateless default sandbox. */
  principal: string;
  /** The namespaces its token is limited to (absent: all of the tenant's). */
  namespaces?: readonly string[];
  /** The caller's tenant-scoped API (stateless requests). */
  api: ForkboxApi;
}

export interface McpHttpOptions {
  /**
   * The API of a legacy session: the caller's tenant (and namespace limit), with creates tied to engine
   * session `session`.
   */
  sessionApi(tenant: string, session: string, namespaces?: readonly string[]): ForkboxApi;
  /**
   * Attach an engine client session with a grace; the returned function detaches it (`graceMs: 0`: its
   * sandboxes end at once).
   */
  attachSession(session: string, opts: { graceMs: number }): (end?: { graceMs?: number }) => void;
  version: string;
  toolsets?: string[];
  log?: ToolLog;
  /** Largest POST body read (bytes). */
  maxBodyBytes: number;
  /** A legacy session with no request for this long is closed (default 10 min). */
  sessionIdleMs?: number;
  /** Live legacy sessions per tenant (default 32). */
  maxSessionsPerTenant?: number;
  /** How long a session's sandboxes outlive it, unless it was ended with DELETE (default 10 min). */
  sessionGraceMs?: number;
  /** Inline output per stream when a call does not say (bytes). */
  outputBytes?: number;
  runner?: RunnerOptions;
  /** Also serve the MCP conformance suite's fixtures (`forkbox serve --conformance-fixtures`). */
  fixtures?: boolean;
}

export interface McpHttp {
  fetch(req: Request, caller: McpCaller): Promise<Response>;
  /** The 2024-11-05 HTTP+SSE transport: `GET /sse` and `POST /messages?sessionId=…`. */
  sse(req: Request, caller: McpCaller): Promise<Response>;
  /** Open legacy sessions (all tenants). */
  sessionCount(): number;
  /** Open HTTP+SSE sessions (all tenants). */
  sseSessionCount(): number;
  close(): Promise<void>;
}

const SESSION_HEADER = 'mcp-session-id';

/** AuthInfo handed through the SDK to the factory. `token` is the principal id, never the secret. */
function authOf(caller: McpCaller): AuthInfo {
  return { token: caller.principal, clientId: caller.tenant, scopes: [], extra: { caller } };
}

function callerOf(ctx: McpRequestContext): McpCaller {
  const caller = ctx.authInfo?.extra?.caller as McpCaller | undefined;
  // Unreachable through fetch() below, which always passes the caller; guards a wiring mistake.
  if (!caller) throw new Error('MCP request without a caller: mount it behind the auth middleware');
  return caller;
}

export function createMcpHttp(opts: McpHttpOptions): McpHttp {
  const limits: SessionLimits = {
    ...DEFAULT_SESSION_LIMITS,
    ...(opts.sessionIdleMs !== undefined ? { idleMs: opts.sessionIdleMs } : {}),
    ...(opts.maxSessionsPerTenant !== undefined ? { maxPerTenant: opts.maxSessionsPerTenant } : {}),
  };
  const statelessDefaults = new Map<string, DefaultSandbox>();
  // One fixture set for the listener's life: its requestState key must outlive the per-request servers.
  const fixtures = opts.fixtures ? createConformanceFixtures() : undefined;
  const serverFor = (api: ForkboxApi, defaults: DefaultSandbox, tenant: string) =>
    createForkboxMcpServer({
      api,
      defaults,
      hostTenant: tenant === DEFAULT_TENANT,
      version: opts.version,
      fixtures,
      outputBytes: opts.outputBytes,
      runner: opts.runner,
      ...(opts.toolsets ? { toolsets: opts.toolsets } : {}),
      ...(opts.log ? { log: opts.log } : {}),
    });
  const factory = (ctx: McpRequestContext) => {
    const caller = callerOf(ctx);
    const key = `${caller.tenant}/${caller.principal}`;
    let defaults = statelessDefaults.get(key);
    if (!defaults) {
      // The owner key lets a restarted daemon find this token's default sandbox again (the map is in
      // memory). Bounded by the tokens of the token file (one entry per principal).
      defaults = createDefaultSandbox(undefined, { owner: defaultSandboxOwner('token', key) });
      statelessDefaults.set(key, defaults);
    }
    return serverFor(caller.api, defaults, caller.tenant);
  };
  const onerror = (e: Error) => opts.log?.debug({ err: e.message }, 'mcp http');
  const modern = createMcpHandler(factory, {
    legacy: 'reject',
    maxRequestBodySize: opts.maxBodyBytes,
    onerror,
  });
  fixtures?.setNotifier(modern.notify);
  const stateless = legacyStatelessFallback(factory, onerror, { maxRequestBodySize: opts.maxBodyBytes });
  const legacyOpts: LegacySessionOptions = {
    limits,
    graceMs: opts.sessionGraceMs ?? DEFAULT_SESSION_GRACE_MS,
    maxBodyBytes: opts.maxBodyBytes,
    sessionApi: opts.sessionApi,
    attachSession: opts.attachSession,
    serverFor,
    authOf: (caller) => authOf(caller as McpCaller),
    ...(opts.log ? { log: opts.log } : {}),
  };
  const legacySessions = createLegacySessions(legacyOpts);
  const sseSessions = createSseSessions({
    limits,
    graceMs: legacyOpts.graceMs,
    sessionApi: opts.sessionApi,
    attachSession: opts.attachSession,
    serverFor,
    authOf: (caller) => authOf(caller as McpCaller),
  });
  const plain = createPlainJsonRpc(factory, { maxBodyBytes: opts.maxBodyBytes, onerror });

  async function legacy(req: Request, caller: McpCaller): Promise<Response> {
    const sid = req.headers.get(SESSION_HEADER);
    if (sid === null) {
      if (isPlainJsonRpc(req)) return plain(req, authOf(caller));
      if (await legacySessions.isInitialize(req)) return legacySessions.open(req, caller);
      return stateless(req, { authInfo: authOf(caller) });
    }
    const s = await legacySessions.find(sid, caller, req);
    if (s instanceof Response) return s;
    s.active++;
    s.lastSeen = Date.now();
    const authInfo = authOf(caller);
    // A connection dropped before the answer cancels the POST's calls (http-disconnect.ts).
    cancelOnDisconnect(s.transport, req, await requestIdsOf(req), authInfo);
    const res = await s.transport.handleRequest(req, { authInfo }).catch((e: unknown) => {
      s.active--;
      throw e;
    });
    return onResponseDone(res, () => {
      s.active--;
      s.lastSeen = Date.now();
    });
  }

  const sweep = setInterval(
    () => {
      legacySessions.sweep();
      sseSessions.sweep();
    },
    Math.min(60_000, Math.max(1000, limits.idleMs / 4)),
  );
  sweep.unref();

  return {
    async fetch(req, caller) {
      if (await isLegacyRequest(req, undefined, { maxRequestBodySize: opts.maxBodyBytes })) {
        return legacy(req, caller);
      }
      return modern.fetch(req, { authInfo: authOf(caller) });
    },
    sse: (req, caller) => sseSessions.fetch(req, caller),
    sessionCount: () => legacySessions.size(),
    sseSessionCount: () => sseSessions.size(),
    async close() {
      clearInterval(sweep);
      await sseSessions.close();
      await legacySessions.close();
      await modern.close();
    },
  };
}
