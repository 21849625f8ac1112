/**
 * (5) Memory per idle sandbox: with N idle sandboxes live, USS / PSS / RSS summed over every process in
 * each sandbox's cgroup (forkbox/<state-id>/sandboxes/<id>). Sandboxes are forks of the template's warm worker, so
 * most of their pages are shared copy-on-write with it: USS is what one more sandbox really costs.
 * Measured on the first surface only (memory does not depend on how the API is reached).
 */
import { type BenchContext, type Benchmark, execTrue, killAll } from './lib/context.ts';
import {
  cgroupMemoryBytes,
  cgroupPids,
  type MemFigures,
  parentPid,
  pidsCgroupOf,
  processesMemory,
  sandboxCgroup,
} from './lib/procmem.ts';
import { emptyResult, row } from './lib/report.ts';

const NAME = 'memory';
const COUNT = 20;
const TARGET_USS_MIB = 10;
const SETTLE_MS = 1000;
const MIB_KB = 1024;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cgroupOf = sandboxCgroup;

export const memoryPerSandbox: Benchmark = {
  name: NAME,
  description: `USS / PSS / RSS per idle sandbox with ${COUNT} idle sandboxes`,
  async run(ctx: BenchContext) {
    const out = emptyResult();
    const s = ctx.surfaces[0];
    if (!s) throw new Error('no surface to measure memory on');
    const ids: string[] = [];
    try {
      for (let i = 0; i < COUNT; i++) {
        const { id } = await s.api.createSandbox({});
        ids.push(id);
        await execTrue(s.api, id);
      }
      // Each sandbox's PID 1 forks its REPL worker after the host welcomes it: wait for both, then settle.
      const deadline = Date.now() + 10000;
      while (ids.some((id) => cgroupPids(cgroupOf(id)).length < 2) && Date.now() < deadline) await sleep(50);
      await sleep(SETTLE_MS);
      const figs: MemFigures[] = ids.map((id) => processesMemory(cgroupPids(cgroupOf(id))));
      const cg = ids.map((id) => cgroupMemoryBytes(cgroupOf(id))).filter((v): v is number => v !== null);
      const mib = (k: keyof MemFigures) => figs.map((f) => f[k] / MIB_KB);
      out.rows.push(
        row(NAME, `${s.name}: USS per idle sandbox (${COUNT} live)`, 'MiB', mib('ussKb'), TARGET_USS_MIB),
        row(NAME, `${s.name}: PSS per idle sandbox`, 'MiB', mib('pssKb')),
        row(NAME, `${s.name}: RSS per idle sandbox (shared pages counted in full)`, 'MiB', mib('rssKb')),
      );
      if (cg.length > 0)
        out.rows.push(
          row(
            NAME,
            `${s.name}: memory cgroup usage per sandbox`,
            'MiB',
            cg.map((b) => b / 2 ** 20),
          ),
        );
      out.notes.push(`processes per sandbox: ${[...new Set(figs.map((f) => f.procs))].join(', ')}`);
      // The template the sandboxes were forked from holds the shared pages once.
      const pid1 = cgroupPids(cgroupOf(ids[0] ?? ''))[0];
      const tplPid = pid1 === undefined ? null : parentPid(pid1);
      const tplCg = tplPid === null ? null : pidsCgroupOf(tplPid);
      if (tplCg) {
        const t = processesMemory(cgroupPids(tplCg));
        out.notes.push(
          `template (${tplCg}, ${t.procs} processes, paid once per image): USS ${(t.ussKb / MIB_KB).toFixed(1)} MiB, PSS ${(t.pssKb / MIB_KB).toFixed(1)} MiB, RSS ${(t.rssKb / MIB_KB).toFixed(1)} MiB`,
        );
      }
    } finally {
      await killAll(s.api, ids, ctx.log);
    }
    return out;
  },
};
