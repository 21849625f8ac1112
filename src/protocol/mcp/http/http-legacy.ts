/**
 * Sessionful MCP over HTTP (the 2025-11-25 era): opening a session, finding it by `Mcp-Session-Id`, and
 * resuming it after it was closed (idle expiry, daemon restart) while its default sandbox still lives.
 *
 * Resuming: the session's default sandbox carries an owner label derived from the session id. A request
 * naming a session the table does not hold, from the tenant that owns a live sandbox with that label, gets
 * the session back under the same id — a new transport and server, initialized on the client's behalf
 * with the protocol version its request names — and re-attaches the engine session, so its sandboxes stay.
 * A session id is an unguessable UUID handed to one client; without such a sandbox the answer is the
 * usual 404 and the client starts a new session.
 */
import { randomUUID } from 'node:crypto';
import type { AuthInfo, McpServer } from '@modelcontextprotocol/server';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import type { ForkboxApi } from '../../../service/api.ts';
import { DEFAULT_LABEL, DEFAULT_OWNER_LABEL, type DefaultSandbox } from '../default-sandbox.ts';
import type { ToolLog } from '../kit/tool-kit.ts';
import { createDefaultSandbox } from '../server.ts';
import { createSessionTable, type SessionLimits, type TableEntry } from './http-sessions.ts';
import { defaultSandboxOwner } from './session-policy.ts';

export interface LegacyCaller {
  tenant: string;
  namespaces?: readonly string[];
  api: ForkboxApi;
}

/** A session answers only callers of its tenant with the same namespace limit (the token's). */
const scopeOf = (c: LegacyCaller) => `${c.tenant}\0${c.namespaces?.join(',') ?? '*'}`;

export interface LegacySessionOptions {
  limits: SessionLimits;
  graceMs: number;
  maxBodyBytes: number;
  sessionApi(tenant: string, session: string, namespaces?: readonly string[]): ForkboxApi;
  attachSession(session: string, opts: { graceMs: number }): (end?: { graceMs?: number }) => void;
  serverFor(api: ForkboxApi, defaults: DefaultSandbox, tenant: string): McpServer;
  authOf(caller: LegacyCaller): AuthInfo;
  log?: ToolLog;
}

export interface LegacySession extends TableEntry {
  /** The opener's tenant and namespace limit (scopeOf). */
  scope: string;
  transport: WebStandardStreamableHTTPServerTransport;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const RESUMED_INIT_ID = 'forkbox-resume';

export function rpcError(
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
) {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

const notFound = () =>
  rpcError(404, -32001, 'Session not found: it ended or never existed. Initialize a new one.');

function sessionOwner(sid: string): string {
  return defaultSandboxOwner('token', `http-session\0${sid}`);
}

/** A POST to the transport with the headers a client would send. */
function post(url: string, body: unknown, sid?: string, version?: string): Request {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  if (sid) headers['mcp-session-id'] = sid;
  if (version) headers['mcp-protocol-version'] = version;
  return new Request(url, { method: 'POST', headers, body: JSON.stringify(body) });
}

export interface LegacySessions {
  /** Sessions in the table. */
  size(): number;
  /** Close idle sessions (called periodically). */
  sweep(): void;
  /** Whether `req` is a POST whose JSON-RPC body is an `initialize` (one that opens a session). */
  isInitialize(req: Request): Promise<boolean>;
  /** Open a session for `caller` with its initialize request (HTTP 429 at the tenant's limit). */
  open(req: Request, caller: LegacyCaller): Promise<Response>;
  /** The caller's session `sid`, resumed if it was closed while its default sandbox lives; else a 404. */
  find(sid: string, caller: LegacyCaller, req: Request): Promise<LegacySession | Response>;
  /** Close every session in the table. */
  close(): Promise<void>;
}

export function createLegacySessions(o: LegacySessionOptions): LegacySessions {
  const table = createSessionTable<LegacySession>(o.limits);
  const resuming = new Map<string, Promise<LegacySession | undefined>>();

  async function make(sid: string, caller: LegacyCaller): Promise<LegacySession> {
    const detach = o.attachSession(sid, { graceMs: o.graceMs });
    const defaults = createDefaultSandbox(undefined, { owner: sessionOwner(sid) });
    const server = o.serverFor(o.sessionApi(caller.tenant, sid, caller.namespaces), defaults, caller.tenant);
    let closed = false;
    const entry: LegacySession = {
      tenant: caller.tenant,
      scope: scopeOf(caller),
      lastSeen: Date.now(),
      active: 0,
      transport: new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => sid,
        onsessioninitialized: (id) => table.set(id, entry),
        // DELETE: the client ended the session, so its sandboxes end at once.
        onsessionclosed: () => entry.close({ ended: true }),
        maxRequestBodySize: o.maxBodyBytes,
      }),
      async close(end = {}) {
        if (closed) return;
        closed = true;
        if (table.get(sid) === entry) table.delete(sid);
        // Detaching the engine session: its non-persistent sandboxes end after the grace (0 if ended).
        detach(end.ended ? { graceMs: 0 } : {});
        // Closing the server aborts the session's calls in flight (their work is cancelled).
        await server.close().catch(() => undefined);
      },
    };
    entry.transport.onclose = () => void entry.close();
    await server.connect(entry.transport);
    return entry;
  }

  async function resume(sid: string, caller: LegacyCaller, req: Request): Promise<LegacySession | undefined> {
    const labels = { [DEFAULT_LABEL]: 'true', [DEFAULT_OWNER_LABEL]: sessionOwner(sid) };
    const live = (await caller.api.listSandboxes({ labels })).some(
      (s) => s.state === 'running' || s.state === 'paused',
    );
    if (!live || !table.admit(caller.tenant).ok) return undefined;
    const entry = await make(sid, caller);
    const version = req.headers.get('mcp-protocol-version') ?? '2025-11-25';
    const auth = { authInfo: o.authOf(caller) };
    const init = await entry.transport.handleRequest(
      post(req.url, {
        jsonrpc: '2.0',
        id: RESUMED_INIT_ID,
        method: 'initialize',
        params: {
          protocolVersion: version,
          capabilities: {},
          clientInfo: { name: 'resumed-session', version: '0' },
        },
      }),
      auth,
    );
    await init.text();
    const done = await entry.transport.handleRequest(
      post(req.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, sid, version),
      auth,
    );
    await done.text();
    if (table.get(sid) !== entry) {
      await entry.close();
      return undefined;
    }
    o.log?.debug({ session: sid }, 'mcp session resumed');
    return entry;
  }

  return {
    size: () => table.size(),
    sweep: () => table.sweep(),

    async isInitialize(req: Request): Promise<boolean> {
      if (req.method !== 'POST') return false;
      try {
        const body = (await req.clone().json()) as { method?: unknown } | null;
        return body !== null && typeof body === 'object' && body.method === 'initialize';
      } catch {
        return false;
      }
    },

    async open(req: Request, caller: LegacyCaller): Promise<Response> {
      const admitted = table.admit(caller.tenant);
      if (!admitted.ok) {
        return rpcError(429, -32000, admitted.message, { 'retry-after': String(admitted.retryAfterS) });
      }
      const sid = randomUUID();
      const entry = await make(sid, caller);
      const res = await entry.transport.handleRequest(req, { authInfo: o.authOf(caller) });
      // A failed initialize never registers the session: release what it took (its sandboxes: none).
      if (table.get(sid) !== entry) await entry.close({ ended: true });
      return res;
    },

    async find(sid: string, caller: LegacyCaller, req: Request): Promise<LegacySession | Response> {
      const s = table.get(sid);
      if (s) return s.scope === scopeOf(caller) ? s : notFound();
      // DELETE of a session that is not open: nothing to resume.
      if (!UUID_RE.test(sid) || req.method === 'DELETE') return notFound();
      const key = `${scopeOf(caller)}/${sid}`;
      let p = resuming.get(key);
      if (!p) {
        p = resume(sid, caller, req).finally(() => resuming.delete(key));
        resuming.set(key, p);
      }
      return (await p.catch(() => undefined)) ?? notFound();
    },

    async close(): Promise<void> {
      await Promise.all([...table.values()].map((s) => s.close()));
    },
  };
}
