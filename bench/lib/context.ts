/** What every benchmark gets, and the shape of a benchmark. */
import type { ForkboxApi } from '../../src/service/api.ts';
import type { Log, Surface } from './env.ts';
import type { Peer } from './peer.ts';
import type { BenchResult } from './report.ts';

export interface BenchContext {
  /** Samples per measurement (≥ 20 for published figures). */
  runs: number;
  /** The daemon (through its client) first, then the in-process engine. */
  surfaces: Surface[];
  peer: Peer;
  log: Log;
  /** Pid of the daemon behind the 'daemon' surface, when one runs (its RSS and fds are measured). */
  daemonPid?: number;
}

export interface Benchmark {
  name: string;
  description: string;
  run(ctx: BenchContext): Promise<BenchResult>;
}

/** Fail loudly when a measured operation did not do what it should: a fast failure is not a result. */
export async function execTrue(api: ForkboxApi, id: string): Promise<void> {
  const r = await api.exec(id, { argv: ['true'] });
  if (r.exitCode !== 0) throw new Error(`exec true in ${id} exited ${r.exitCode}: ${r.stderr}`);
}

/** Kill sandboxes, never throwing (cleanup after a failed benchmark must go on). */
export async function killAll(api: ForkboxApi, ids: string[], log: Log): Promise<void> {
  for (const id of ids) {
    await api.killSandbox(id).catch((e: unknown) => log(`kill ${id} failed: ${String(e)}`));
  }
}
