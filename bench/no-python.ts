/**
 * Images without python3 (docs/IMAGES.md): the agent then runs on the default image's Python, mounted
 * read-only at /.forkbox/runtime and started through its own loader. Compared with the default image
 * (whose own python3 runs the agent), per sample on a fresh in-process engine and state dir: the first
 * create → exec true (the template starts), a second create → exec true, and a fork into 1 child →
 * exec true in it. The python-less image is a busybox-static root (/bin/busybox and its applet links).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { openEngine } from '../src/composition.ts';
import type { ForkboxApi } from '../src/service/api.ts';
import { type BenchContext, type Benchmark, execTrue } from './lib/context.ts';
import { makeStateDir, tmpDir } from './lib/env.ts';
import { emptyResult, ratio, row } from './lib/report.ts';
import { nowMs } from './lib/stats.ts';

const NAME = 'no-python';
const BUSYBOX = '/bin/busybox';

const quiet = {
  debug: () => undefined,
  info: () => undefined,
  warn: (o: object | string, m?: string) =>
    process.stderr.write(`[${NAME} warn] ${JSON.stringify(o)} ${m ?? ''}\n`),
  error: (o: object | string, m?: string) =>
    process.stderr.write(`[${NAME} error] ${JSON.stringify(o)} ${m ?? ''}\n`),
};

function busyboxRoot(work: string): string {
  const root = join(work, 'busybox');
  mkdirSync(join(root, 'bin'), { recursive: true });
  mkdirSync(join(root, 'tmp'), { mode: 0o1777 });
  copyFileSync(BUSYBOX, join(root, 'bin', 'busybox'));
  const list = spawnSync(BUSYBOX, ['--list-full'], { encoding: 'utf8' });
  if (list.status !== 0) throw new Error(`${BUSYBOX} --list-full (install busybox-static): ${list.stderr}`);
  for (const applet of list.stdout.split('\n').filter((l) => l && l !== 'bin/busybox')) {
    mkdirSync(dirname(join(root, applet)), { recursive: true });
    symlinkSync('/bin/busybox', join(root, applet));
  }
  return root;
}

async function createExec(api: ForkboxApi, image: string): Promise<{ ms: number; id: string }> {
  const t0 = nowMs();
  const id = (await api.createSandbox({ image })).id;
  await execTrue(api, id);
  return { ms: nowMs() - t0, id };
}

export const noPython: Benchmark = {
  name: NAME,
  description:
    'template start, create and fork on an image without python3 (agent on the runtime mount) vs the default image',
  async run(ctx: BenchContext) {
    const out = emptyResult();
    const work = tmpDir(NAME);
    const samples = {
      debian: { first: [] as number[], second: [] as number[], fork: [] as number[] },
      busybox: { first: [] as number[], second: [] as number[], fork: [] as number[] },
    };
    try {
      const root = busyboxRoot(work);
      for (let i = 0; i < ctx.runs; i++) {
        const stateDir = makeStateDir(NAME);
        const opened = await openEngine({ stateDir, log: quiet, reapIntervalMs: 0 });
        try {
          await opened.api.importImage('busybox', root);
          for (const image of ['debian', 'busybox'] as const) {
            const s = samples[image];
            const a = await createExec(opened.api, image);
            s.first.push(a.ms);
            const b = await createExec(opened.api, image);
            s.second.push(b.ms);
            const t0 = nowMs();
            const f = await opened.api.forkSandbox(b.id, { n: 1 });
            const child = f.children[0]?.sandbox?.id;
            if (!child) throw new Error(`fork failed: ${JSON.stringify(f.children)}`);
            await execTrue(opened.api, child);
            s.fork.push(nowMs() - t0);
          }
        } finally {
          await opened.close({ killSandboxes: true });
          rmSync(stateDir, { recursive: true, force: true });
        }
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    const labels = {
      first: 'first create → exec true (template start)',
      second: 'create → exec true (template running)',
      fork: 'fork 1 child → exec true in it',
    };
    for (const k of ['first', 'second', 'fork'] as const) {
      const d = row(NAME, `debian (own python3): ${labels[k]}`, 'ms', samples.debian[k]);
      const b = row(NAME, `busybox (runtime mount): ${labels[k]}`, 'ms', samples.busybox[k]);
      out.rows.push(d, b);
      out.ratios.push(ratio(NAME, `${k}: busybox / debian`, b, d));
    }
    return out;
  },
};
