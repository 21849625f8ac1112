/**
 * Per-tenant concurrency limit: at most `max` requests in flight per tenant, so one tenant cannot take
 * every engine slot (or the daemon's memory) from the others. Over the limit is an immediate
 * `resource_exhausted` (HTTP 429), not a queue: a queue would hide the overload from the client.
 */
import { ForkboxError } from '../../domain/errors.ts';

export const DEFAULT_MAX_CONCURRENCY = 64;

export interface ConcurrencyLimiter {
  /** Take a slot for `tenant`; returns its release function (idempotent). Throws when none is free. */
  acquire(tenant: string): () => void;
  inFlight(tenant: string): number;
  /** Requests in flight across tenants. */
  total(): number;
  /** Resolves when no request is in flight (or after `timeoutMs`); true when drained. */
  drained(timeoutMs: number): Promise<boolean>;
}

export function createConcurrencyLimiter(max = DEFAULT_MAX_CONCURRENCY): ConcurrencyLimiter {
  const counts = new Map<string, number>();
  let total = 0;
  let waiters: (() => void)[] = [];
  return {
    acquire(tenant) {
      const n = counts.get(tenant) ?? 0;
      if (n >= max) {
        throw new ForkboxError(
          'resource_exhausted',
          `too many requests in flight for tenant '${tenant}' (limit ${max}). Wait for some to finish, then retry.`,
          { limit: max },
        );
      }
      counts.set(tenant, n + 1);
      total++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (counts.get(tenant) ?? 1) - 1;
        if (left <= 0) counts.delete(tenant);
        else counts.set(tenant, left);
        total--;
        if (total === 0) {
          const w = waiters;
          waiters = [];
          for (const f of w) f();
        }
      };
    },
    inFlight: (tenant) => counts.get(tenant) ?? 0,
    total: () => total,
    drained(timeoutMs) {
      if (total === 0) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs);
        timer.unref();
        waiters.push(() => {
          clearTimeout(timer);
          resolve(true);
        });
      });
    },
  };
}

/**
 * Call `done` once the response has been fully sent or abandoned: streamed bodies (NDJSON, SSE) are
 * still running when the handler returns, and a slot or an audit line must cover their whole life.
 */
export function onResponseDone(res: Response, done: () => void): Response {
  if (!res.body) {
    done();
    return res;
  }
  let called = false;
  const once = () => {
    if (!called) {
      called = true;
      done();
    }
  };
  const reader = res.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(ctrl) {
      try {
        const { done: end, value } = await reader.read();
        if (end) {
          ctrl.close();
          once();
        } else ctrl.enqueue(value);
      } catch (e) {
        ctrl.error(e);
        once();
      }
    },
    cancel(reason) {
      once();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}
