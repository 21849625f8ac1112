/**
 * An exec's output as server-sent events, for the console's pages (a command's live output, a terminal):
 * `out` events with the text of each chunk ({stream, data}, its `id` the chunk's sequence number), then
 * one `end` event with how it ended. It polls the exec (pollExec, which waits for new output) and checks
 * the session between polls; it ends when the exec has, when the page is gone, when the session is no
 * longer valid, or after MAX_POLLS (30 minutes: EventSource reconnects, and its Last-Event-ID resumes
 * after the last chunk it got, so nothing is sent twice). A `: ping` comment goes out every 15 s of
 * silence. Each stream holds one of the tenant's console stream slots (events.ts) until it ends.
 */
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import { toForkboxError } from '../../domain/errors.ts';
import type { ExecRecord } from '../../domain/types.ts';
import type { ForkboxApi } from '../../service/api.ts';

/** How long one poll waits for output (the session is checked again between polls). */
const POLL_WAIT_MS = 5000;
const PING_EVERY_POLLS = 3;
const MAX_POLLS = 360;

/** Where a reconnecting page resumes: after the chunk its Last-Event-ID names (-1: from the start). */
export function resumeAfter(lastEventId: string | undefined): number {
  return lastEventId !== undefined && /^[0-9]{1,15}$/.test(lastEventId) ? Number(lastEventId) : -1;
}

/** How an exec ended, in words. */
export function endedAs(e: ExecRecord): string {
  if (e.exitCode !== null) return `${e.state}, exit ${e.exitCode}`;
  if (e.signal !== null) return `${e.state}, signal ${e.signal}`;
  return e.state;
}

export interface ExecStreamOptions {
  api: ForkboxApi;
  sandbox: string;
  exec: string;
  stillValid(): Promise<boolean>;
  /** The tenant's stream slot, released when the stream ends. */
  release(): void;
  /** Whether to go on (a terminal closed by its console stops here). */
  live?(): boolean;
  onEnd?(): void;
  onClose?(): void;
}

export function execEventStream(c: Context, o: ExecStreamOptions): Response {
  let afterSeq = resumeAfter(c.req.header('last-event-id'));
  return streamSSE(c, async (s) => {
    try {
      for (let polls = 0; polls < MAX_POLLS && !s.aborted && (o.live?.() ?? true); polls++) {
        if (!(await o.stillValid())) break;
        const p = await o.api.pollExec(o.sandbox, o.exec, { afterSeq, waitMs: POLL_WAIT_MS });
        for (const ch of p.chunks) {
          afterSeq = Math.max(afterSeq, ch.seq);
          const data = JSON.stringify({ stream: ch.stream, data: ch.data });
          await s.writeSSE({ event: 'out', id: String(ch.seq), data });
        }
        if (p.chunks.length === 0 && polls % PING_EVERY_POLLS === PING_EVERY_POLLS - 1)
          await s.write(': ping\n\n');
        if (p.done) {
          await s.writeSSE({ event: 'end', data: JSON.stringify(endedAs(p.exec)) });
          o.onEnd?.();
          break;
        }
      }
    } catch (e) {
      await s.writeSSE({ event: 'end', data: JSON.stringify(toForkboxError(e).message) }).catch(() => {});
    } finally {
      o.release();
      o.onClose?.();
    }
  });
}
