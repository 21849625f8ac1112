/** (3) REPL eval round trip (`1+1`) on a warm sandbox, through the daemon and in-process. */
import type { ForkboxApi } from '../src/service/api.ts';
import { type BenchContext, type Benchmark, killAll } from './lib/context.ts';
import { emptyResult, row } from './lib/report.ts';
import { timeMs } from './lib/stats.ts';

const NAME = 'repl';
const TARGET_MS = 3;
const WARMUP = 5;

async function eval2(api: ForkboxApi, id: string): Promise<void> {
  const r = await api.runCode(id, { code: '1+1' });
  if (!r.ok || r.value !== '2') throw new Error(`1+1 in ${id} gave ${JSON.stringify(r)}`);
}

export const replEval: Benchmark = {
  name: NAME,
  description: 'REPL eval round trip (1+1) on a warm sandbox',
  async run(ctx: BenchContext) {
    const out = emptyResult();
    for (const s of ctx.surfaces) {
      const { id } = await s.api.createSandbox({});
      try {
        for (let i = 0; i < WARMUP; i++) await eval2(s.api, id);
        const samples: number[] = [];
        for (let i = 0; i < ctx.runs; i++) samples.push(await timeMs(() => eval2(s.api, id)));
        out.rows.push(row(NAME, `${s.name}: eval 1+1`, 'ms', samples, TARGET_MS));
      } finally {
        await killAll(s.api, [id], ctx.log);
      }
    }
    return out;
  },
};
