/**
 * Calls whose cost a caller controls (a diff walks as many files as the sandboxes hold): at most a few at
 * once per tenant, the next refused at once, so one tenant cannot keep the daemon's walks for itself.
 * The walks themselves run off the event loop (the native runtime's diff workers), so the calls of others
 * are answered meanwhile.
 */
import { ForkboxError } from '../../domain/errors.ts';

/** Concurrent diffs per tenant. */
export const HEAVY_CALLS_PER_TENANT = 2;

export interface HeavyCalls {
  /** Run `fn` as one of `tenant`'s heavy calls, or refuse it (resource_exhausted) when it has its share running. */
  run<T>(tenant: string, what: string, fn: () => Promise<T>): Promise<T>;
}

export function createHeavyCalls(max = HEAVY_CALLS_PER_TENANT): HeavyCalls {
  const running = new Map<string, number>();
  return {
    async run(tenant, what, fn) {
      const n = running.get(tenant) ?? 0;
      if (n >= max)
        throw new ForkboxError(
          'resource_exhausted',
          `${what} refused: ${max} of this tenant's ${what}s are running, the most at once; retry when one has answered.`,
          { limit: max },
        );
      running.set(tenant, n + 1);
      try {
        return await fn();
      } finally {
        const left = (running.get(tenant) ?? 1) - 1;
        if (left === 0) running.delete(tenant);
        else running.set(tenant, left);
      }
    },
  };
}
