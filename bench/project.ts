/**
 * The user's project in a sandbox (docs/STORAGE.md, "Project directories"): a project of 2,000 small
 * files and a binary file (test/helpers/project.ts), owned by a non-root uid. Measured through a daemon
 * started with `--project-root`, from a long-lived client: `create --project` → the first `ls /work`
 * answered, against `create` → `forkbox cp DIR ID:/work` (the CLI, as a user would copy it in) → the
 * first `ls /work`; plus a plain create → first `ls` (what the project adds is the difference).
 * Samples are interleaved so each side sees the same load.
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ForkboxApi } from '../src/service/api.ts';
import { FILES, makeProject } from '../test/helpers/project.ts';
import { type BenchContext, type Benchmark, killAll } from './lib/context.ts';
import { startDaemon, tmpDir } from './lib/env.ts';
import { emptyResult, ratio, row } from './lib/report.ts';
import { nowMs } from './lib/stats.ts';

const NAME = 'project';
const BIN = resolve(import.meta.dirname, '..', 'bin', 'forkbox.js');

async function firstLs(api: ForkboxApi, id: string): Promise<void> {
  const r = await api.exec(id, { argv: ['sh', '-c', 'ls /work | wc -l'] });
  if (r.exitCode !== 0 || r.stdout.trim() !== '22')
    throw new Error(`ls /work in ${id}: ${r.stdout} ${r.stderr}`);
}

export const projectBench: Benchmark = {
  name: NAME,
  description: `a ${FILES}-file project at /work (create --project) against copying it in (forkbox cp)`,
  async run(ctx: BenchContext) {
    const out = emptyResult();
    const root = tmpDir('projects');
    const project = join(root, 'app');
    makeProject(project);
    const daemon = await startDaemon(ctx.log, ['--project-root', root]);
    const api = daemon.client;
    const stateDir = daemon.surface.stateDir;
    const s = { project: [] as number[], cp: [] as number[], plain: [] as number[] };
    try {
      for (let i = 0; i < ctx.runs; i++) {
        let t0 = nowMs();
        const a = (await api.createSandbox({ project })).id;
        await firstLs(api, a);
        s.project.push(nowMs() - t0);

        t0 = nowMs();
        const b = (await api.createSandbox({})).id;
        const cp = spawnSync(process.execPath, [BIN, '--state-dir', stateDir, 'cp', project, `${b}:/work`], {
          encoding: 'utf8',
          env: { ...process.env, FORKBOX_URL: '' },
        });
        if (cp.status !== 0) throw new Error(`forkbox cp exited ${cp.status}: ${cp.stderr}`);
        await firstLs(api, b);
        s.cp.push(nowMs() - t0);

        t0 = nowMs();
        const c = (await api.createSandbox({})).id;
        const r = await api.exec(c, { argv: ['ls', '/'] });
        if (r.exitCode !== 0) throw new Error(`ls / in ${c}: ${r.stderr}`);
        s.plain.push(nowMs() - t0);
        await killAll(api, [a, b, c], ctx.log);
      }
    } finally {
      await daemon.stop();
      rmSync(root, { recursive: true, force: true });
    }
    const p = row(NAME, 'create --project → first ls /work', 'ms', s.project);
    const c = row(NAME, 'create → forkbox cp → first ls /work', 'ms', s.cp);
    const plain = row(NAME, 'create → first ls / (no project)', 'ms', s.plain);
    out.rows.push(p, c, plain);
    out.ratios.push(ratio(NAME, 'project layer vs copying it in', p, c));
    out.ratios.push(ratio(NAME, 'create with a project vs without', p, plain));
    out.notes.push(
      `${FILES} files of ~30 bytes in 20 directories, a binary file and a README, owned by uid 1000`,
    );
    return out;
  },
};
