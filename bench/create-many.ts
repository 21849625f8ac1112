/**
 * (4) 50 creates in a row (total and per sandbox), then 50 kills, through the daemon and in-process.
 * Shows whether create slows down as live sandboxes accumulate (mount table, cgroups, store).
 */
import { type BenchContext, type Benchmark, killAll } from './lib/context.ts';
import { emptyResult, row } from './lib/report.ts';
import { nowMs, summarize, timeMs } from './lib/stats.ts';

const NAME = 'create-50';
const COUNT = 50;
// 50 × the default 1 GiB would pass the default admission budget (2 × host RAM) on small hosts.
const MEMORY_MB = 256;

export const createMany: Benchmark = {
  name: NAME,
  description: `create ${COUNT} sandboxes in a row, then kill them`,
  async run(ctx: BenchContext) {
    const out = emptyResult();
    for (const s of ctx.surfaces) {
      // Template already warm when another benchmark ran first; make sure it is.
      const warm = await s.api.createSandbox({});
      await killAll(s.api, [warm.id], ctx.log);
      const ids: string[] = [];
      const per: number[] = [];
      try {
        const t0 = nowMs();
        for (let i = 0; i < COUNT; i++) {
          per.push(
            await timeMs(async () => {
              ids.push((await s.api.createSandbox({ memoryMb: MEMORY_MB })).id);
            }),
          );
        }
        const total = nowMs() - t0;
        out.rows.push(
          row(NAME, `${s.name}: ${COUNT} creates, total`, 'ms', [total]),
          row(NAME, `${s.name}:   per create`, 'ms', per),
        );
        const first = summarize(per.slice(0, 10)).p50;
        const last = summarize(per.slice(-10)).p50;
        out.notes.push(
          `${s.name}: create p50 of the first 10 = ${first.toFixed(1)} ms, of the last 10 (with ${COUNT - 10}+ live) = ${last.toFixed(1)} ms`,
        );
      } finally {
        const kills: number[] = [];
        const t0 = nowMs();
        for (const id of ids) kills.push(await timeMs(() => killAll(s.api, [id], ctx.log)));
        const total = nowMs() - t0;
        if (kills.length > 0)
          out.rows.push(
            row(NAME, `${s.name}: ${kills.length} kills, total`, 'ms', [total]),
            row(NAME, `${s.name}:   per kill`, 'ms', kills),
          );
      }
    }
    return out;
  },
};
