/**
 * (6) The peer alone: cold `runc run` of /bin/true and of python3 -c 'print(1)' with the same image,
 * interleaved with forkbox doing the same through the first surface (a new sandbox, then the command),
 * so each ratio compares figures taken under the same machine load. Every timed sample follows an idle
 * gap (IDLE_GAP_MS in lib/stats.ts explains why).
 */
import type { ForkboxApi } from '../src/service/api.ts';
import { type BenchContext, type Benchmark, killAll } from './lib/context.ts';
import { emptyResult, ratio, row } from './lib/report.ts';
import { IDLE_GAP_MS, nowMs, sleep } from './lib/stats.ts';

const NAME = 'peer';
const PY = ['/usr/bin/python3', '-c', 'print(1)'];

async function forkboxRun(api: ForkboxApi, argv: string[], log: (m: string) => void): Promise<number> {
  await sleep(IDLE_GAP_MS);
  const t0 = nowMs();
  const { id } = await api.createSandbox({});
  try {
    const r = await api.exec(id, { argv });
    const t = nowMs() - t0;
    if (r.exitCode !== 0) throw new Error(`${argv.join(' ')} exited ${r.exitCode}: ${r.stderr}`);
    return t;
  } finally {
    await killAll(api, [id], log);
  }
}

export const peerRunc: Benchmark = {
  name: NAME,
  description: "cold runc run of true and python3 -c 'print(1)', and forkbox doing the same",
  async run(ctx: BenchContext) {
    const out = emptyResult();
    const s = ctx.surfaces[0];
    if (!s) throw new Error('no surface to compare with');
    const runcTrue: number[] = [];
    const runcPy: number[] = [];
    const fbTrue: number[] = [];
    const fbPy: number[] = [];
    // Warm-up: page cache for the image, runc's binary, the template.
    await ctx.peer.run(['/bin/true']);
    await ctx.peer.run(PY);
    await forkboxRun(s.api, ['true'], ctx.log);
    for (let i = 0; i < ctx.runs; i++) {
      await sleep(IDLE_GAP_MS);
      runcTrue.push((await ctx.peer.run(['/bin/true'])).totalMs);
      await sleep(IDLE_GAP_MS);
      const py = await ctx.peer.run(PY);
      if (py.stdout !== '1\n') throw new Error(`runc run python3 printed ${JSON.stringify(py.stdout)}`);
      runcPy.push(py.totalMs);
      fbTrue.push(await forkboxRun(s.api, ['true'], ctx.log));
      fbPy.push(await forkboxRun(s.api, PY, ctx.log));
    }
    const rt = row(NAME, 'runc run /bin/true', 'ms', runcTrue);
    const rp = row(NAME, "runc run python3 -c 'print(1)'", 'ms', runcPy);
    const ft = row(NAME, `${s.name}: create → exec true`, 'ms', fbTrue);
    const fp = row(NAME, `${s.name}: create → exec python3 -c 'print(1)'`, 'ms', fbPy);
    out.rows.push(rt, rp, ft, fp);
    out.ratios.push(
      ratio(NAME, `${s.name} create → exec true / runc run true`, ft, rt),
      ratio(NAME, `${s.name} create → exec python3 / runc run python3`, fp, rp),
    );
    out.notes.push(
      `peer: ${ctx.peer.runc} with a private --root, the image's layers overlay-mounted per run`,
    );
    return out;
  },
};
