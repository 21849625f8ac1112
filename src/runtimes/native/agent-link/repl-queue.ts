/**
 * Calls to one sandbox's REPL wait in a per-sandbox queue on the host (a fork waits for evals in flight and
 * new evals wait for it). A call whose signal is aborted while it waits is dropped: its caller gets a
 * "cancelled before it started" answer at once, and when its turn comes it runs nothing.
 */
import type { ReplResult } from '../../../service/ports.ts';
import { cancelledBeforeStart } from './repl-eval.ts';

type Run = <T>(key: string, fn: () => Promise<T>) => Promise<T>;

export function queuedUnlessCancelled(
  run: Run,
  key: string,
  signal: AbortSignal | undefined,
  fn: () => Promise<ReplResult>,
): Promise<ReplResult> {
  if (signal === undefined) return run(key, fn);
  if (signal.aborted) return Promise.resolve(cancelledBeforeStart());
  return new Promise<ReplResult>((resolve, reject) => {
    let started = false;
    const onAbort = (): void => {
      if (!started) resolve(cancelledBeforeStart());
    };
    signal.addEventListener('abort', onAbort, { once: true });
    run(key, async () => {
      signal.removeEventListener('abort', onAbort);
      if (signal.aborted) return; // dropped: its caller already has its answer
      started = true;
      try {
        resolve(await fn());
      } catch (e) {
        reject(e);
      }
    }).catch(reject);
  });
}
