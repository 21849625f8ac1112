/**
 * Output floods from one sandbox (issue: a flood took the daemon's RSS to 1.93 GB): a synchronous exec
 * printing as fast as it can (the daemon keeps head and tail; the agent drains and spools the rest) and a
 * background exec doing the same (its latest output forwarded at a bounded rate). Reports the daemon's RSS
 * and a second sandbox's exec latency, with and without the flood, in the same run.
 */
import type { ForkboxApi } from '../src/service/api.ts';
import type { BenchContext, Benchmark } from './lib/context.ts';
import { type Flood, measureFlood } from './lib/flood.ts';
import { emptyResult } from './lib/report.ts';

const syncFlood: Flood = {
  name: 'exec flood (sync)',
  async start(api: ForkboxApi, id: string) {
    const ac = new AbortController();
    const running = api.exec(id, { cmd: 'cat /dev/zero' }, { signal: ac.signal });
    running.catch(() => undefined);
    return async () => {
      ac.abort();
      const o = await running;
      if (!o.cancelled) throw new Error(`the flood was not cancelled: ${JSON.stringify(o).slice(0, 300)}`);
    };
  },
};

const backgroundFlood: Flood = {
  name: 'exec flood (background)',
  async start(api: ForkboxApi, id: string) {
    const rec = await api.startExec(id, { cmd: 'cat /dev/zero' });
    return async () => {
      await api.cancelExec(id, rec.id);
    };
  },
};

export const outputFlood: Benchmark = {
  name: 'output-flood',
  description: "daemon RSS and another sandbox's exec latency while one sandbox floods output",
  async run(ctx: BenchContext) {
    const out = emptyResult();
    for (const f of [syncFlood, backgroundFlood]) {
      const r = await measureFlood(ctx, 'output-flood', f);
      out.rows.push(...r.rows);
      out.ratios.push(...r.ratios);
      out.notes.push(...r.notes);
    }
    return out;
  },
};
