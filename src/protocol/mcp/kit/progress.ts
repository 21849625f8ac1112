/**
 * Progress notifications for one tool call, when its request carries a progressToken: a heartbeat every
 * `intervalMs` while the call runs (silent work included), so clients that reset their request timeout
 * on progress do not time out, plus the latest state the tool reports (e.g. the tail of its output),
 * sent at most once a second.
 *
 * No state is sent in a call's first `quietMs`, and none is flushed when the call ends: the result is the
 * final state. A notification written just before the result is worse than none: the TypeScript SDK
 * handles a notification a microtask after it reads it but a response at once, so when both arrive in one
 * read the response removes the progress handler first and the notification is dropped (seen in CI).
 * Notifications are ordered, numbered upwards, bounded in size, and all sent before the result; none is
 * sent after the request was cancelled.
 */
import type { ServerContext } from '@modelcontextprotocol/server';
import type { ProgressEvent } from '../../../service/api.ts';
import type { ToolLog } from './tool-kit.ts';

/** Default heartbeat period: well under the 10 s the docs promise, whatever the scheduling jitter. */
export const PROGRESS_INTERVAL_MS = 5000;
const MIN_GAP_MS = 1000;
/** A call's first milliseconds without state notifications: a call this short answers with its result. */
export const PROGRESS_QUIET_MS = 250;
/** Characters of reported state kept for a message (its tail: the newest output). */
const MAX_MESSAGE = 2000;

export interface ProgressReporter {
  /** The latest state of the work (kept to its last MAX_MESSAGE characters). */
  update(message: string): void;
  /** Stop the heartbeat; resolves once every notification queued so far was handed to the transport. */
  stop(): Promise<void>;
}

const NOOP: ProgressReporter = { update: () => undefined, stop: async () => undefined };

export function startProgress(
  ctx: ServerContext,
  tool: string,
  log: ToolLog,
  intervalMs = PROGRESS_INTERVAL_MS,
  quietMs = PROGRESS_QUIET_MS,
): ProgressReporter {
  const token = ctx.mcpReq._meta?.progressToken;
  if (token === undefined) return NOOP;
  const started = Date.now();
  let chain: Promise<void> = Promise.resolve();
  let n = 0;
  let latest: string | undefined;
  let pending = false;
  let lastSent = 0;
  let stopped = false;

  const send = () => {
    if (stopped || ctx.mcpReq.signal.aborted) return;
    const secs = Math.round((Date.now() - started) / 1000);
    const message =
      latest === undefined
        ? `${tool}: running for ${secs}s`
        : `${tool}: running for ${secs}s; latest: ${latest}`;
    const progress = ++n;
    pending = false;
    lastSent = Date.now();
    chain = chain
      .then(() =>
        ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken: token, progress, message },
        }),
      )
      .catch((e: unknown) => log.debug({ err: (e as Error).message }, 'progress notification not sent'));
  };
  const beat = setInterval(send, intervalMs);
  beat.unref?.();
  let trailing: NodeJS.Timeout | undefined;

  return {
    update(message) {
      if (stopped) return;
      latest = message.length > MAX_MESSAGE ? `…${message.slice(-MAX_MESSAGE)}` : message;
      const now = Date.now();
      // The next moment a state may go out: after the quiet start, and a gap after the last one sent.
      const due = Math.max(started + quietMs, lastSent + MIN_GAP_MS);
      if (now >= due) send();
      else if (!pending) {
        pending = true;
        trailing = setTimeout(send, due - now);
        trailing.unref?.();
      }
    },
    async stop() {
      clearInterval(beat);
      if (trailing) clearTimeout(trailing);
      // A state still held back is not sent: the result, which follows, carries it.
      stopped = true;
      await chain;
    },
  };
}

const mib = (n: number) => `${(n / (1024 * 1024)).toFixed(1)} MiB`;

/** An engine progress event (an image pull's phase, with its bytes when known) as one line of text. */
export function progressEventText(e: ProgressEvent): string {
  if (e.total === undefined || e.total <= 0) return e.message;
  return `${e.message} (${mib(e.current ?? 0)} of ${mib(e.total)})`;
}
