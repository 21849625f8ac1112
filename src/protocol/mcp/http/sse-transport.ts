/**
 * One HTTP+SSE session's end of the MCP server (a Transport over a Web ReadableStream): the `endpoint`
 * event first, then each message the server sends as a `message` event, and a comment line on demand
 * (keep-alive). It tracks the ids of the client's requests still waiting for their answers, for the
 * pending-request bound of http-sse.ts. The stream being cancelled (the client left) closes it.
 */
import type { JSONRPCMessage, MessageExtraInfo, Transport } from '@modelcontextprotocol/server';
import { isJSONRPCResponse } from '@modelcontextprotocol/server';

/** The path POSTs go to (the `endpoint` event names it with the session id). */
export const SSE_MESSAGES_PATH = '/messages';

/** One session: the server's Transport, writing to the session's event stream. */
export class SseTransport implements Transport {
  sessionId: string;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void) | undefined;
  /** Ids of the client's requests still waiting for their answers. */
  readonly pending = new Set<string | number>();
  private controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  private readonly encoder = new TextEncoder();
  private closed = false;
  readonly stream: ReadableStream<Uint8Array>;
  private readonly onAnswered: () => void;

  constructor(sid: string, onAnswered: () => void) {
    this.sessionId = sid;
    this.onAnswered = onAnswered;
    this.stream = new ReadableStream<Uint8Array>({
      start: (c) => {
        this.controller = c;
        this.write(`event: endpoint\ndata: ${SSE_MESSAGES_PATH}?sessionId=${sid}\n\n`);
      },
      // The client went away: the session ends.
      cancel: () => void this.close(),
    });
  }

  private write(text: string): boolean {
    if (this.closed || !this.controller) return false;
    try {
      this.controller.enqueue(this.encoder.encode(text));
      return true;
    } catch {
      return false;
    }
  }

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    if (!this.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`)) {
      throw new Error('the SSE stream of this session is closed');
    }
    if (isJSONRPCResponse(message) && message.id !== undefined && this.pending.delete(message.id)) {
      this.onAnswered();
    }
  }

  /** A comment line: keeps proxies from closing a quiet stream. */
  keepAlive(): void {
    this.write(': keep-alive\n\n');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      this.controller?.close();
    } catch {
      // already closed by the client
    }
    this.onclose?.();
  }
}
