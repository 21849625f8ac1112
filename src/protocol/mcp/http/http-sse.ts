/**
 * The 2024-11-05 HTTP+SSE transport (what mcp-remote's `sse-only` mode and older clients speak):
 * `GET /sse` opens an event stream whose first event is `endpoint`, naming `/messages?sessionId=…`;
 * the client POSTs each JSON-RPC message there (answered `202 Accepted`) and reads the answers on the
 * stream. The SDK's own SSE server transport is Node-`http`-only and in its v1 line, so this is a small
 * Transport over Web streams for the v2 server, with forkbox's bounds:
 *
 * - sessions live in a table of their own with the limits of the sessionful Streamable HTTP ones
 *   (http-sessions.ts): live sessions per tenant, all sessions, idle expiry (a stream with no message
 *   for the idle time is closed); a session is live while a request of it waits for its answer;
 * - at most MCP_SSE.pendingRequests requests of a session wait for their answers at once (more: 429);
 * - a session answers only the tenant and namespace limit (the token's) that opened it; another
 *   caller presenting its id gets the same 404 as for an unknown id;
 * - the stream closing (the client left) ends the session: its calls in flight are cancelled and its
 *   sandboxes get the grace of session-policy.ts, like a sessionful HTTP session's. It cannot be
 *   resumed (the transport has no way to): a client that comes back opens a new one.
 *
 * Authentication, Host/Origin checks and body limits happen before this handler (protocol/http/app.ts).
 */
import { randomUUID } from 'node:crypto';
import type { AuthInfo, JSONRPCMessage, McpServer } from '@modelcontextprotocol/server';
import { isJSONRPCRequest, parseJSONRPCMessage } from '@modelcontextprotocol/server';
import { MCP_SSE } from '../../../domain/limits.ts';
import type { ForkboxApi } from '../../../service/api.ts';
import type { DefaultSandbox } from '../default-sandbox.ts';
import { createDefaultSandbox } from '../server.ts';
import { rpcError } from './http-legacy.ts';
import { createSessionTable, type SessionLimits, type TableEntry } from './http-sessions.ts';
import { defaultSandboxOwner } from './session-policy.ts';
import { SseTransport } from './sse-transport.ts';

export { SSE_MESSAGES_PATH } from './sse-transport.ts';

export interface SseCaller {
  tenant: string;
  namespaces?: readonly string[];
}

export interface SseOptions {
  limits: SessionLimits;
  graceMs: number;
  sessionApi(tenant: string, session: string, namespaces?: readonly string[]): ForkboxApi;
  attachSession(session: string, opts: { graceMs: number }): (end?: { graceMs?: number }) => void;
  serverFor(api: ForkboxApi, defaults: DefaultSandbox, tenant: string): McpServer;
  authOf(caller: SseCaller): AuthInfo;
}

const scopeOf = (c: SseCaller) => `${c.tenant}\0${c.namespaces?.join(',') ?? '*'}`;
const notFound = () =>
  rpcError(404, -32001, 'SSE session not found: it ended or never existed. Open a new one with GET /sse.');

interface SseSession extends TableEntry {
  scope: string;
  transport: SseTransport;
}

export interface SseSessions {
  /** GET /sse opens a session; POST /messages?sessionId=… delivers a message to one. */
  fetch(req: Request, caller: SseCaller): Promise<Response>;
  /** Sessions in the table. */
  size(): number;
  /** Close idle sessions (called periodically). */
  sweep(): void;
  /** Stop the keep-alives and close every session. */
  close(): Promise<void>;
}

export function createSseSessions(o: SseOptions): SseSessions {
  const table = createSessionTable<SseSession>(o.limits);
  const keepAlive = setInterval(() => {
    for (const s of table.values()) s.transport.keepAlive();
  }, MCP_SSE.keepAliveMs);
  keepAlive.unref();

  async function open(caller: SseCaller): Promise<Response> {
    const admitted = table.admit(caller.tenant);
    if (!admitted.ok) {
      return rpcError(429, -32000, admitted.message, { 'retry-after': String(admitted.retryAfterS) });
    }
    const sid = randomUUID();
    const detach = o.attachSession(sid, { graceMs: o.graceMs });
    const defaults = createDefaultSandbox(undefined, {
      owner: defaultSandboxOwner('token', `sse-session\0${sid}`),
    });
    const server = o.serverFor(o.sessionApi(caller.tenant, sid, caller.namespaces), defaults, caller.tenant);
    let closed = false;
    const entry: SseSession = {
      tenant: caller.tenant,
      scope: scopeOf(caller),
      lastSeen: Date.now(),
      active: 0,
      transport: new SseTransport(sid, () => {
        entry.active = entry.transport.pending.size;
        entry.lastSeen = Date.now();
      }),
      async close() {
        if (closed) return;
        closed = true;
        if (table.get(sid) === entry) table.delete(sid);
        detach();
        await entry.transport.close();
        // Closing the server aborts the session's calls in flight (their work is cancelled).
        await server.close().catch(() => undefined);
      },
    };
    entry.transport.onclose = () => void entry.close();
    table.set(sid, entry);
    await server.connect(entry.transport);
    return new Response(entry.transport.stream, {
      status: 200,
      headers: {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
      },
    });
  }

  async function post(req: Request, caller: SseCaller): Promise<Response> {
    const sid = new URL(req.url).searchParams.get('sessionId') ?? '';
    const s = table.get(sid);
    if (!s || s.scope !== scopeOf(caller)) return notFound();
    const type = req.headers.get('content-type') ?? '';
    if (!/^application\/json\s*(;|$)/i.test(type)) {
      return rpcError(415, -32000, 'Unsupported Media Type: send the JSON-RPC message as application/json.');
    }
    let raw: unknown;
    try {
      raw = JSON.parse(await req.text());
    } catch {
      return rpcError(400, -32700, 'Parse error: the body is not JSON.');
    }
    let msg: JSONRPCMessage;
    try {
      msg = parseJSONRPCMessage(raw);
    } catch {
      return rpcError(400, -32600, 'Invalid Request: send one JSON-RPC 2.0 message per POST.');
    }
    const t = s.transport;
    if (isJSONRPCRequest(msg)) {
      if (t.pending.size >= MCP_SSE.pendingRequests) {
        return rpcError(
          429,
          -32000,
          `this SSE session already has ${MCP_SSE.pendingRequests} requests waiting for their answers: wait for some, then retry.`,
          { 'retry-after': '1' },
        );
      }
      t.pending.add(msg.id);
    }
    s.active = t.pending.size;
    s.lastSeen = Date.now();
    t.onmessage?.(msg, { authInfo: o.authOf(caller), request: req });
    return new Response('Accepted', { status: 202 });
  }

  return {
    async fetch(req: Request, caller: SseCaller): Promise<Response> {
      if (req.method === 'GET') return open(caller);
      if (req.method === 'POST') return post(req, caller);
      return rpcError(
        405,
        -32000,
        'Method not allowed: GET /sse opens a session, POST /messages sends to it.',
      );
    },
    size: () => table.size(),
    sweep: () => table.sweep(),
    async close(): Promise<void> {
      clearInterval(keepAlive);
      await Promise.all([...table.values()].map((s) => s.close()));
    },
  };
}
