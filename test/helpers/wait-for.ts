/**
 * Waiting for a state instead of sleeping: poll `predicate` until it holds (returns a truthy value,
 * which is returned) or the deadline passes, then fail with what was awaited and the last value seen.
 * The deadline is a bound on a hang, never a measurement: keep it generous, since the machine running
 * the tests may be slow and shared.
 */
export interface WaitForOptions {
  /** What is awaited, in words ("the sandbox is killed"): the failure message names it. */
  what: string;
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Pause between polls (default 20 ms). */
  intervalMs?: number;
}

export async function waitFor<T>(
  predicate: () => T | Promise<T>,
  opts: WaitForOptions,
): Promise<NonNullable<T>> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 20;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await predicate();
      if (v) return v as NonNullable<T>;
      last = v;
      lastError = undefined;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() >= deadline) {
      const seen =
        lastError !== undefined
          ? `the last poll threw: ${lastError instanceof Error ? lastError.message : String(lastError)}`
          : `the last poll returned ${JSON.stringify(last)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting until ${opts.what} (${seen})`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Resolves when `emitter`-style `register(cb)` calls back, or fails after `timeoutMs` naming `what`. */
export function waitForEvent<T>(
  register: (cb: (v: T) => void) => void,
  opts: Omit<WaitForOptions, 'intervalMs'>,
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(
      () => reject(new Error(`timed out after ${timeoutMs} ms waiting until ${opts.what}`)),
      timeoutMs,
    );
    register((v) => {
      clearTimeout(t);
      resolve(v);
    });
  });
}
