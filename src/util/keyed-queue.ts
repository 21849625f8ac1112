/**
 * Functions run one after another per key: a per-key mutex over promises. A function runs when the
 * previous one of its key settles, whether it resolved or rejected; keys with nothing queued are dropped.
 */
export interface KeyedQueue {
  run<T>(key: string, fn: () => Promise<T>): Promise<T>;
  /** Whether something runs or waits under this key. */
  busy(key: string): boolean;
  /** Resolves once everything queued so far has settled. */
  drain(): Promise<void>;
}

export function createKeyedQueue(): KeyedQueue {
  const tails = new Map<string, Promise<unknown>>();
  return {
    run<T>(key: string, fn: () => Promise<T>): Promise<T> {
      const prev = tails.get(key) ?? Promise.resolve();
      const next = prev.then(fn, fn);
      const tail = next.catch(() => undefined);
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return next;
    },
    busy: (key) => tails.has(key),
    async drain() {
      await Promise.allSettled([...tails.values()]);
    },
  };
}
