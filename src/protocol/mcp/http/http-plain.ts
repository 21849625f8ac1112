/**
 * Plain JSON-RPC over `POST /mcp`: one message in, one JSON body out, no session and no event stream —
 * what clients of microsandbox's `msb server` send (no `Accept: text/event-stream`, no
 * `Mcp-Session-Id`, often no `initialize` first).
 *
 * The rule that tells it from Streamable HTTP on the same URL (http.ts): a legacy-era POST (no 2026-07-28
 * `_meta` envelope) **without** an `Mcp-Session-Id` header **and** whose `Accept` does not list
 * `text/event-stream` is plain. Streamable HTTP clients must accept both `application/json` and
 * `text/event-stream` on every POST, so none of theirs is taken for plain; a plain client would otherwise
 * get `406 Not Acceptable`. A plain POST is served statelessly, like the SDK's stateless fallback, by a
 * server of its own whose answer is a single `application/json` body: an `initialize` is answered but
 * opens no session, and a call needs none. A body without a content type is read as JSON.
 */
import type { AuthInfo, McpRequestContext, McpServer } from '@modelcontextprotocol/server';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';

const SESSION_HEADER = 'mcp-session-id';

/** A POST that wants a plain JSON answer (see the module comment); call only for legacy-era requests. */
export function isPlainJsonRpc(req: Request): boolean {
  if (req.method !== 'POST' || req.headers.has(SESSION_HEADER)) return false;
  return !/\btext\/event-stream\b/i.test(req.headers.get('accept') ?? '');
}

export function createPlainJsonRpc(
  factory: (ctx: McpRequestContext) => McpServer,
  opts: { maxBodyBytes: number; onerror: (e: Error) => void },
) {
  return async (req: Request, authInfo: AuthInfo): Promise<Response> => {
    // The transport checks what a Streamable HTTP client sends; a plain client sent neither.
    const headers = new Headers(req.headers);
    headers.set('accept', 'application/json, text/event-stream');
    if (!headers.has('content-type')) headers.set('content-type', 'application/json');
    const inner = new Request(req.url, { method: 'POST', headers, body: await req.arrayBuffer() });
    const server = factory({ era: 'legacy', authInfo, requestInfo: req });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      maxRequestBodySize: opts.maxBodyBytes,
    });
    transport.onerror = opts.onerror;
    const teardown = () => {
      transport.close().catch(() => undefined);
      server.close().catch(() => undefined);
    };
    // The client hanging up cancels its call (the server's close aborts it).
    req.signal.addEventListener('abort', teardown, { once: true });
    try {
      await server.connect(transport);
      return await transport.handleRequest(inner, { authInfo });
    } finally {
      req.signal.removeEventListener('abort', teardown);
      teardown();
    }
  };
}
