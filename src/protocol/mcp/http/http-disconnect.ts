/**
 * A session's call whose HTTP connection drops is cancelled (issue #12, "Cancellation everywhere"). In a
 * 2025-11-25 session the transport outlives any one POST, so the SDK never learns that the client of a
 * `tools/call` went away: its work would run on with nobody to answer. When the POST's request signal
 * aborts before its response was fully sent (the HTTP server aborts it when the connection closes early),
 * each JSON-RPC request of that POST gets a `notifications/cancelled` through the same transport, as if the
 * client had sent one: the ordinary cancel path then stops an exec's whole process tree or interrupts the
 * REPL code.
 */
import type { AuthInfo, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';

type RequestId = string | number;

/** Ids of the JSON-RPC requests (not notifications) in a POST's body: one message or a batch. */
export async function requestIdsOf(req: Request): Promise<RequestId[]> {
  if (req.method !== 'POST') return [];
  let body: unknown;
  try {
    body = await req.clone().json();
  } catch {
    return []; // the transport answers the parse error itself
  }
  const ids: RequestId[] = [];
  for (const m of Array.isArray(body) ? body : [body]) {
    if (m === null || typeof m !== 'object') continue;
    const { id, method } = m as { id?: unknown; method?: unknown };
    if (typeof method === 'string' && (typeof id === 'string' || typeof id === 'number')) ids.push(id);
  }
  return ids;
}

/**
 * Cancel `ids` on `transport` when `req`'s signal aborts. The HTTP server aborts it only when the
 * connection closed before the response was fully written; a cancel that comes after its call answered
 * anyway names an id the SDK no longer tracks, and is ignored.
 */
export function cancelOnDisconnect(
  transport: WebStandardStreamableHTTPServerTransport,
  req: Request,
  ids: RequestId[],
  authInfo: AuthInfo,
): void {
  if (ids.length === 0) return;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  for (const h of ['mcp-session-id', 'mcp-protocol-version']) {
    const v = req.headers.get(h);
    if (v !== null) headers[h] = v;
  }
  const onAbort = () => {
    const body = ids.map((requestId) => ({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId, reason: 'the client closed its connection' },
    }));
    const cancel = new Request(req.url, { method: 'POST', headers, body: JSON.stringify(body) });
    void transport
      .handleRequest(cancel, { authInfo })
      .then((r) => r.body?.cancel())
      .catch(() => undefined);
  };
  if (req.signal.aborted) onAbort();
  else req.signal.addEventListener('abort', onAbort, { once: true });
}
