/** (2) Exec round trip (`true`) on a warm sandbox, through the daemon and in-process. */
import { type BenchContext, type Benchmark, execTrue, killAll } from './lib/context.ts';
import { emptyResult, row } from './lib/report.ts';
import { timeMs } from './lib/stats.ts';

const NAME = 'exec';
const TARGET_MS = 5;
const WARMUP = 5;

export const execRoundTrip: Benchmark = {
  name: NAME,
  description: 'exec round trip (true) on a warm sandbox',
  async run(ctx: BenchContext) {
    const out = emptyResult();
    for (const s of ctx.surfaces) {
      const { id } = await s.api.createSandbox({});
      try {
        for (let i = 0; i < WARMUP; i++) await execTrue(s.api, id);
        const samples: number[] = [];
        for (let i = 0; i < ctx.runs; i++) samples.push(await timeMs(() => execTrue(s.api, id)));
        out.rows.push(row(NAME, `${s.name}: exec true`, 'ms', samples, TARGET_MS));
        // The shell form adds a /bin/sh start inside the sandbox: what `forkbox exec -c` costs.
        const sh: number[] = [];
        for (let i = 0; i < ctx.runs; i++) sh.push(await timeMs(() => s.api.exec(id, { cmd: 'true' })));
        out.rows.push(row(NAME, `${s.name}: exec sh -c true`, 'ms', sh));
      } finally {
        await killAll(s.api, [id], ctx.log);
      }
    }
    return out;
  },
};
