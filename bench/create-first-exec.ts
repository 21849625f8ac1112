/**
 * (1) Sandbox create → first exec result (`true`), through the daemon and in-process, interleaved per
 * iteration with a cold `runc run /bin/true` of the same image so the ratio shares the machine's noise.
 * The first create of each surface starts its template (a runc container); it is reported apart.
 * Every timed sample follows an idle gap (IDLE_GAP_MS in lib/stats.ts explains why).
 */
import { type BenchContext, type Benchmark, execTrue, killAll } from './lib/context.ts';
import { emptyResult, ratio, row } from './lib/report.ts';
import { IDLE_GAP_MS, nowMs, sleep, timeMs } from './lib/stats.ts';

const NAME = 'create';
const TARGET_MS = 50;

export const createFirstExec: Benchmark = {
  name: NAME,
  description: 'sandbox create → first exec result (true), vs cold runc run of true',
  async run(ctx: BenchContext) {
    const out = emptyResult();
    // Warm-up: the first create per surface starts the template; measured once, not in the samples.
    for (const s of ctx.surfaces) {
      let id = '';
      const cold = await timeMs(async () => {
        id = (await s.api.createSandbox({})).id;
        await execTrue(s.api, id);
      });
      await killAll(s.api, [id], ctx.log);
      out.notes.push(
        `${s.name}: first create → exec with a cold template (template start included): ${cold.toFixed(0)} ms`,
      );
    }
    await ctx.peer.run(['/bin/true']);

    const create = new Map<string, number[]>();
    const exec = new Map<string, number[]>();
    const total = new Map<string, number[]>();
    const kill = new Map<string, number[]>();
    for (const s of ctx.surfaces) for (const m of [create, exec, total, kill]) m.set(s.name, []);
    const peer: number[] = [];

    for (let i = 0; i < ctx.runs; i++) {
      for (const s of ctx.surfaces) {
        await sleep(IDLE_GAP_MS);
        const t0 = nowMs();
        const { id } = await s.api.createSandbox({});
        const t1 = nowMs();
        try {
          await execTrue(s.api, id);
          const t2 = nowMs();
          create.get(s.name)?.push(t1 - t0);
          exec.get(s.name)?.push(t2 - t1);
          total.get(s.name)?.push(t2 - t0);
        } finally {
          kill.get(s.name)?.push(await timeMs(() => s.api.killSandbox(id)));
        }
      }
      await sleep(IDLE_GAP_MS);
      peer.push((await ctx.peer.run(['/bin/true'])).totalMs);
    }

    const peerRow = row(NAME, 'peer: runc run /bin/true (overlay mount + run)', 'ms', peer);
    for (const s of ctx.surfaces) {
      const t = row(NAME, `${s.name}: create → exec true`, 'ms', total.get(s.name) ?? [], TARGET_MS);
      out.rows.push(
        t,
        row(NAME, `${s.name}:   create only`, 'ms', create.get(s.name) ?? []),
        row(NAME, `${s.name}:   first exec true`, 'ms', exec.get(s.name) ?? []),
        row(NAME, `${s.name}: kill (not in the total)`, 'ms', kill.get(s.name) ?? []),
      );
      out.ratios.push(ratio(NAME, `${s.name} create → exec true / runc run true`, t, peerRow));
    }
    out.rows.push(peerRow);
    return out;
  },
};
