/** Helpers for tests of execs against a real daemon or engine: processes in a sandbox, RSS, waiting. */
import { readFileSync } from 'node:fs';
import type { ForkboxApi } from '../../src/service/api.ts';
import { waitFor } from './wait-for.ts';

/** Processes in the sandbox whose command line starts with `prefix` (seen from inside, with ps). */
export async function processesIn(api: ForkboxApi, id: string, prefix: string): Promise<string[]> {
  const r = await api.exec(id, { argv: ['ps', '-eo', 'pid=,args='] });
  return r.stdout.split('\n').filter((l) =>
    l
      .trim()
      .replace(/^\d+\s+/, '')
      .startsWith(prefix),
  );
}

/** Resident memory of a host process, in MiB. */
export function rssMiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m?.[1]) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) / 1024;
}

/** Poll `f` until it returns true; fail naming `what` after `ms` (the shared loop of wait-for.ts). */
export async function until(what: string, f: () => Promise<boolean> | boolean, ms = 60_000): Promise<void> {
  await waitFor(f, { what, timeoutMs: ms, intervalMs: 100 });
}

/** Sample a process's RSS every 100 ms until stopped; returns the maximum seen (MiB). */
export function sampleRss(pid: number): { stop(): number } {
  let max = rssMiB(pid);
  const t = setInterval(() => {
    try {
      max = Math.max(max, rssMiB(pid));
    } catch {
      // the process ended: the test says why
    }
  }, 100);
  return {
    stop() {
      clearInterval(t);
      return max;
    },
  };
}
