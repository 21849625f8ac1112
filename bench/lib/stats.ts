/** Sample statistics and timing for the benchmarks: medians and p90 over repeated runs. */
import { performance } from 'node:perf_hooks';

export interface Summary {
  n: number;
  p50: number;
  p90: number;
  min: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of an already sorted sample (p in 0..100). */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

/** Median with interpolation between the two middle values for even sizes. */
function median(sorted: number[]): number {
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  const mid = Math.floor(n / 2);
  const hi = sorted[mid] ?? Number.NaN;
  return n % 2 === 1 ? hi : ((sorted[mid - 1] ?? Number.NaN) + hi) / 2;
}

export function summarize(samples: number[]): Summary {
  const s = [...samples].sort((a, b) => a - b);
  const sum = s.reduce((a, b) => a + b, 0);
  return {
    n: s.length,
    p50: median(s),
    p90: percentile(s, 90),
    min: s[0] ?? Number.NaN,
    max: s[s.length - 1] ?? Number.NaN,
    mean: s.length > 0 ? sum / s.length : Number.NaN,
  };
}

/** Milliseconds taken by `fn`, measured with the monotonic high-resolution clock. */
export async function timeMs(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

export const nowMs = (): number => performance.now();

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Idle time before each timed create (forkbox's and the peer's). Moving a process into a cgroup costs a
 * synchronize_rcu (~5–10 ms here) when no other migration happened in the last few tens of ms, and
 * almost nothing otherwise; without a gap, whichever runs right after another create gets it cheap.
 * With the gap every sample starts from the same state: a create after idle, as an agent makes it.
 */
export const IDLE_GAP_MS = 100;
