/** Deadlines for the browser's waits. */
import { ForkboxError } from '../domain/errors.ts';

/** A point in time to work towards, for polling loops. */
export function deadlineAfter(ms: number) {
  const end = Date.now() + ms;
  return {
    passed: () => Date.now() >= end,
    left: () => Math.max(0, end - Date.now()),
    sleep: (step: number) =>
      new Promise<void>((r) => setTimeout(r, Math.min(step, Math.max(0, end - Date.now())))),
  };
}

/** `p`, or a `timeout` error (message starting "deadline") once `ms` have passed. */
export function withDeadline<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ForkboxError('timeout', `deadline of ${ms} ms passed`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
