export interface SharedLock {
  /** Run `fn` holding `key` shared (alongside other shared holders), once no exclusive holder has it. */
  shared<T>(key: string, fn: () => Promise<T>): Promise<T>;
  /** Run `fn` holding `key` alone, once no shared or exclusive holder has it. */
  exclusive<T>(key: string, fn: () => Promise<T>): Promise<T>;
}

/**
 * Per key: many `shared` holders at once, or one `exclusive` holder. Placing processes into exec groups
 * is shared (concurrent moves share one RCU grace period); a fork sorting a sandbox's processes into its
 * leaves is exclusive (it must not move a process being placed back to `work`).
 */
export function createSharedLock(): SharedLock {
  const state = new Map<string, { shared: number; exclusive: Promise<void> | null; idle: (() => void)[] }>();
  const of = (key: string) => {
    let s = state.get(key);
    if (!s) {
      s = { shared: 0, exclusive: null, idle: [] };
      state.set(key, s);
    }
    return s;
  };
  const release = (key: string) => {
    const s = state.get(key);
    if (s && s.shared === 0 && s.exclusive === null) {
      state.delete(key);
      for (const w of s.idle.splice(0)) w();
    }
  };
  return {
    async shared<T>(key: string, fn: () => Promise<T>): Promise<T> {
      let s = of(key);
      while (s.exclusive) {
        await s.exclusive;
        s = of(key);
      }
      s.shared += 1;
      try {
        return await fn();
      } finally {
        s.shared -= 1;
        release(key);
      }
    },
    async exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
      let s = of(key);
      while (s.exclusive || s.shared > 0) {
        const cur = s;
        await (cur.exclusive ?? new Promise<void>((r) => cur.idle.push(r)));
        s = of(key);
      }
      let done: () => void = () => undefined;
      s.exclusive = new Promise<void>((r) => {
        done = r;
      });
      try {
        return await fn();
      } finally {
        s.exclusive = null;
        done();
        release(key);
      }
    },
  };
}
