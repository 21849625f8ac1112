/**
 * MCP over Streamable HTTP (POST/GET/DELETE /mcp), both protocol eras behind one URL:
 *
 * - 2026-07-28 (modern, stateless): `createMcpHandler` builds a server per request. Cross-request state is
 *   the default sandbox, kept per token (per caller principal) in `statelessDefaults` and labelled with an
 *   owner key derived from it, so that a restarted daemon adopts it again (default-sandbox.ts).
 * - 2025-11-25 and older (legacy): requests are told apart with the SDK's own `isLegacyRequest`. An
 *   `initialize` opens a sessionful `WebStandardStreamableHTTPServerTransport` keyed by `Mcp-Session-Id`
 *   with its own server, default sandbox and engine client session: sandboxes it creates end with it
 *   (DELETE, idle expiry or shutdown), like a stdio connection's. Legacy requests without a session id
 *   (clients that never initialize) are served statelessly by the SDK's fallback.
 *
 * A session belongs to the tenant that opened it: another tenant presenting its id gets the same 404 as
 * for an unknown id, so session ids cannot be used to probe or hijack other tenants' sessions.
 * Authentication, Host/Origin checks and body limits happen before this handler (protocol/http/app.ts).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { AuthInfo, McpRequestContext } from '@modelcontextprotocol/server';
import {
  createMcpHandler,
  isLegacyRequest,
  legacyStatelessFallback,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import type { ForkboxApi } from '../../service/api.ts';
import { onResponseDone } from '../http/limits.ts';
import { createConformanceFixtures } from './conformance-fixtures.ts';
import { createDefaultSandbox, createForkboxMcpServer, type DefaultSandbox } from './server.ts';
import type { ToolLog } from './tool-kit.ts';

export interface McpCaller {
  tenant: string;
  /** Stable per token: keys the stateless default sandbox. */
  principal: string;
  /** The caller's tenant-scoped API (stateless requests). */
  api: ForkboxApi;
}

export interface McpHttpOptions {
  /** The API of a legacy session: the caller's tenant, with creates tied to engine session `session`. */
  sessionApi(tenant: string, session: string): ForkboxApi;
  /** Attach an engine client session; the returned function detaches it (its sandboxes then end). */
  attachSession(session: string): () => void;
  version: string;
  toolsets?: string[];
  log?: ToolLog;
  /** Largest POST body read (bytes). */
  maxBodyBytes: number;
  /** A legacy session with no request for this long is closed (default 30 min). */
  sessionIdleMs?: number;
  /** Open legacy sessions per tenant (default 32). */
  maxSessionsPerTenant?: number;
  /** Also serve the MCP conformance suite's fixtures (`forkbox serve --conformance-fixtures`). */
  fixtures?: boolean;
}

export interface McpHttp {
  fetch(req: Request, caller: McpCaller): Promise<Response>;
  /** Open legacy sessions (all tenants). */
  sessionCount(): number;
  close(): Promise<void>;
}

interface LegacySession {
  tenant: string;
  transport: WebStandardStreamableHTTPServerTransport;
  close(): Promise<void>;
  lastSeen: number;
  active: number;
}

const SESSION_HEADER = 'mcp-session-id';

function rpcError(status: number, code: number, message: string): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
    status,
    headers: { 'content-type': 'application/json' },
  });
}

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

async function isInitialize(req: Request): Promise<boolean> {
  if (req.method !== 'POST') return false;
  try {
    const body = (await req.clone().json()) as { method?: unknown } | null;
    return body !== null && typeof body === 'object' && body.method === 'initialize';
  } catch {
    return false;
  }
}

export function createMcpHttp(opts: McpHttpOptions): McpHttp {
  const idleMs = opts.sessionIdleMs ?? 30 * 60_000;
  const maxSessions = opts.maxSessionsPerTenant ?? 32;
  const statelessDefaults = new Map<string, DefaultSandbox>();
  const sessions = new Map<string, LegacySession>();
  // One fixture set for the listener's life: its requestState key must outlive the per-request servers.
  const fixtures = opts.fixtures ? createConformanceFixtures() : undefined;
  const serverFor = (api: ForkboxApi, defaults: DefaultSandbox) =>
    createForkboxMcpServer({
      api,
      defaults,
      version: opts.version,
      fixtures,
      ...(opts.toolsets ? { toolsets: opts.toolsets } : {}),
      ...(opts.log ? { log: opts.log } : {}),
    });
  const factory = (ctx: McpRequestContext) => {
    const caller = callerOf(ctx);
    const key = `${caller.tenant}/${caller.principal}`;
    let defaults = statelessDefaults.get(key);
    if (!defaults) {
      // The owner key lets a restarted daemon find this token's default sandbox again (the map is in
      // memory). A hash of the principal, not the principal: labels are shown to every token of the tenant.
      const owner = createHash('sha256').update(`forkbox.mcp-default\0${key}`).digest('hex').slice(0, 16);
      defaults = createDefaultSandbox(undefined, { owner });
      statelessDefaults.set(key, defaults);
    }
    return serverFor(caller.api, defaults);
  };
  const onerror = (e: Error) => opts.log?.debug({ err: e.message }, 'mcp http');
  const modern = createMcpHandler(factory, {
    legacy: 'reject',
    maxRequestBodySize: opts.maxBodyBytes,
    onerror,
  });
  fixtures?.setNotifier(modern.notify);
  const stateless = legacyStatelessFallback(factory, onerror, { maxRequestBodySize: opts.maxBodyBytes });

  async function openSession(req: Request, caller: McpCaller): Promise<Response> {
    let open = 0;
    for (const s of sessions.values()) if (s.tenant === caller.tenant) open++;
    if (open >= maxSessions) {
      return rpcError(
        429,
        -32000,
        `too many open MCP sessions for this tenant (limit ${maxSessions}). Close some (HTTP DELETE /mcp) or use the stateless 2026-07-28 protocol.`,
      );
    }
    const sid = randomUUID();
    const detach = opts.attachSession(sid);
    const server = serverFor(opts.sessionApi(caller.tenant, sid), createDefaultSandbox());
    let closed = false;
    const entry: LegacySession = {
      tenant: caller.tenant,
      lastSeen: Date.now(),
      active: 0,
      transport: new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => sid,
        onsessioninitialized: (id) => {
          sessions.set(id, entry);
        },
        onsessionclosed: () => entry.close(),
        maxRequestBodySize: opts.maxBodyBytes,
      }),
      async close() {
        if (closed) return;
        closed = true;
        sessions.delete(sid);
        // Ends the engine session: its non-persistent sandboxes (the default one too) are killed.
        detach();
        await server.close().catch(() => undefined);
      },
    };
    entry.transport.onclose = () => void entry.close();
    await server.connect(entry.transport);
    const res = await entry.transport.handleRequest(req, { authInfo: authOf(caller) });
    // A failed initialize never registers the session: release what it took.
    if (!sessions.has(sid)) await entry.close();
    return res;
  }

  async function legacy(req: Request, caller: McpCaller): Promise<Response> {
    const sid = req.headers.get(SESSION_HEADER);
    if (sid !== null) {
      const s = sessions.get(sid);
      if (!s || s.tenant !== caller.tenant) {
        return rpcError(404, -32001, 'Session not found: it ended or never existed. Initialize a new one.');
      }
      s.active++;
      s.lastSeen = Date.now();
      const res = await s.transport.handleRequest(req, { authInfo: authOf(caller) }).catch((e: unknown) => {
        s.active--;
        throw e;
      });
      return onResponseDone(res, () => {
        s.active--;
        s.lastSeen = Date.now();
      });
    }
    if (await isInitialize(req)) return openSession(req, caller);
    return stateless(req, { authInfo: authOf(caller) });
  }

  const sweep = setInterval(
    () => {
      const cutoff = Date.now() - idleMs;
      for (const s of sessions.values()) if (s.active === 0 && s.lastSeen < cutoff) void s.close();
    },
    Math.min(60_000, Math.max(1000, idleMs / 4)),
  );
  sweep.unref();

  return {
    async fetch(req, caller) {
      if (await isLegacyRequest(req, undefined, { maxRequestBodySize: opts.maxBodyBytes })) {
        return legacy(req, caller);
      }
      return modern.fetch(req, { authInfo: authOf(caller) });
    },
    sessionCount: () => sessions.size,
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((s) => s.close()));
      await modern.close();
    },
  };
}
