/**
 * An exec's output as server-sent events, for the console's pages (a command's live output, a terminal):
 * `out` events with the text of each chunk ({stream, data}), then one `end` event with how it ended.
 * It polls the exec (pollExec, which waits for new output) and checks the session between polls; it ends
 * when the exec has, when the page is gone, or when the session is no longer valid.
 */
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import { toForkboxError } from '../../domain/errors.ts';
import type { ExecRecord } from '../../domain/types.ts';
import type { ForkboxApi } from '../../service/api.ts';

/** How long one poll waits for output (the session is checked again between polls). */
const POLL_WAIT_MS = 5000;

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
  /** Whether to go on (a terminal closed by its console stops here). */
  live?(): boolean;
  onEnd?(): void;
  onClose?(): void;
}

export function execEventStream(c: Context, o: ExecStreamOptions): Response {
  return streamSSE(c, async (s) => {
    let afterSeq = -1;
    try {
      while (!s.aborted && (o.live?.() ?? true)) {
        if (!(await o.stillValid())) break;
        const p = await o.api.pollExec(o.sandbox, o.exec, { afterSeq, waitMs: POLL_WAIT_MS });
        for (const ch of p.chunks) {
          afterSeq = Math.max(afterSeq, ch.seq);
          await s.writeSSE({ event: 'out', data: JSON.stringify({ stream: ch.stream, data: ch.data }) });
        }
        if (p.done) {
          await s.writeSSE({ event: 'end', data: JSON.stringify(endedAs(p.exec)) });
          o.onEnd?.();
          break;
        }
      }
    } catch (e) {
      await s.writeSSE({ event: 'end', data: JSON.stringify(toForkboxError(e).message) }).catch(() => {});
    } finally {
      o.onClose?.();
    }
  });
}
