/**
 * Floods from one sandbox, measured from outside: the daemon's RSS and open fds, and a second sandbox's
 * exec latency during the flood against the same latency without it, in the same run. A flood is a
 * `Flood` (start it in sandbox A; stop returns once it is over); output floods are in output-flood.ts,
 * connection and file floods plug in the same way.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type BenchContext, execTrue, killAll } from './context.ts';
import { type BenchResult, emptyResult, ratio, row } from './report.ts';
import { timeMs } from './stats.ts';

export interface Flood {
  name: string;
  /** Start flooding from sandbox `id`; resolves once it runs. The returned function stops it. */
  start(api: ForkboxApi, id: string): Promise<() => Promise<void>>;
}

export function rssMiB(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m?.[1] ? Number(m[1]) / 1024 : Number.NaN;
}

export function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The flood's effect on the daemon surface: RSS and fds before and at most, and B's exec latency. */
export async function measureFlood(ctx: BenchContext, bench: string, flood: Flood): Promise<BenchResult> {
  const out = emptyResult();
  const surface = ctx.surfaces.find((s) => s.name === 'daemon');
  const pid = ctx.daemonPid;
  if (!surface || pid === undefined) {
    out.notes.push(`${bench}: needs the daemon surface (--surface daemon)`);
    return out;
  }
  const { api } = surface;
  const a = (await api.createSandbox({})).id;
  const b = (await api.createSandbox({})).id;
  try {
    for (let i = 0; i < 5; i++) await execTrue(api, b);
    const quiet: number[] = [];
    for (let i = 0; i < ctx.runs; i++) quiet.push(await timeMs(() => execTrue(api, b)));
    const rssBefore = rssMiB(pid);
    const fdsBefore = fdCount(pid);
    let rssMax = rssBefore;
    let fdsMax = fdsBefore;
    const sampler = setInterval(() => {
      rssMax = Math.max(rssMax, rssMiB(pid));
      fdsMax = Math.max(fdsMax, fdCount(pid));
    }, 100);
    const stop = await flood.start(api, a);
    const loud: number[] = [];
    try {
      await sleep(1000); // the flood at full speed first
      for (let i = 0; i < ctx.runs; i++) loud.push(await timeMs(() => execTrue(api, b)));
    } finally {
      await stop();
      clearInterval(sampler);
    }
    const quietRow = row(bench, `${flood.name}: exec in another sandbox, no flood`, 'ms', quiet);
    const loudRow = row(bench, `${flood.name}: exec in another sandbox, during the flood`, 'ms', loud);
    out.rows.push(quietRow, loudRow);
    out.rows.push(row(bench, `${flood.name}: daemon RSS before`, 'MiB', [rssBefore]));
    out.rows.push(row(bench, `${flood.name}: daemon RSS max during`, 'MiB', [rssMax]));
    out.ratios.push(ratio(bench, `${flood.name}: exec latency, flood / no flood`, loudRow, quietRow));
    out.notes.push(`${flood.name}: daemon fds ${fdsBefore} before, ${fdsMax} at most during the flood`);
  } finally {
    await killAll(api, [a, b], ctx.log);
  }
  return out;
}
