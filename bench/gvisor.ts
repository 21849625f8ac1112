/**
 * (gvisor) The gvisor runtime against the native one and against Docker, on one surface and one machine in
 * the same run: create → first exec, exec round trip, the source's pause during a fork and the fork's wall
 * time (a source holding a 100 MB Python process, into 1 and 4 children), memory per child, and the restore
 * of a snapshot. Docker's figures: `docker run --rm … true` and `docker commit` + `docker run` of a child
 * (its private dockerd, as bench/fork.ts), skipped with a note when docker.io is not installed.
 */
import type { ForkboxApi } from '../src/service/api.ts';
import { type BenchContext, type Benchmark, execTrue, killAll } from './lib/context.ts';
import { type DockerPeer, dockerPeerUnavailable, startDockerPeer } from './lib/docker-peer.ts';
import { type BenchResult, emptyResult, ratio, row } from './lib/report.ts';
import { IDLE_GAP_MS, nowMs, sleep, timeMs } from './lib/stats.ts';

const NAME = 'gvisor';
const RUNTIMES = ['native', 'gvisor'] as const;
type Name = (typeof RUNTIMES)[number];
/** A source with a live 100 MB Python process, for the pause window (the anchor). */
const HOLD_100MB = `(python3 -c "import os,time; b=bytearray(os.urandom(1<<20))*100; time.sleep(3600)" >/dev/null 2>&1 &); sleep 2`;
/** Forks and restores are slow on gvisor (a checkpoint each): fewer samples. */
const HEAVY_RUNS_MAX = 5;

async function sh(api: ForkboxApi, id: string, cmd: string): Promise<void> {
  const r = await api.exec(id, { cmd, timeoutSeconds: 120 });
  if (r.exitCode !== 0) throw new Error(`${cmd} exited ${r.exitCode}: ${r.stderr}`);
}

async function createExec(api: ForkboxApi, runtime: Name, runs: number) {
  const create: number[] = [];
  const exec: number[] = [];
  for (let i = 0; i < runs; i++) {
    await sleep(IDLE_GAP_MS);
    let id = '';
    create.push(
      await timeMs(async () => {
        id = (await api.createSandbox({ runtime })).id;
        await execTrue(api, id);
      }),
    );
    for (let k = 0; k < 5; k++) exec.push(await timeMs(() => execTrue(api, id)));
    await api.killSandbox(id);
  }
  return { create, exec };
}

async function forks(api: ForkboxApi, runtime: Name, runs: number, ctx: BenchContext) {
  const src = (await api.createSandbox({ runtime })).id;
  const out = {
    pause1: [] as number[],
    wall1: [] as number[],
    wall4: [] as number[],
    childMiB: [] as number[],
  };
  try {
    await sh(api, src, HOLD_100MB);
    for (let i = 0; i < runs; i++) {
      for (const n of [1, 4]) {
        await sleep(IDLE_GAP_MS);
        const t0 = nowMs();
        const r = await api.forkSandbox(src, { n });
        const wall = nowMs() - t0;
        const ids = r.children.flatMap((c) => (c.sandbox ? [c.sandbox.id] : []));
        if (ids.length !== n) throw new Error(`${runtime} fork of ${n}: ${JSON.stringify(r.children)}`);
        if (n === 1) {
          out.pause1.push(r.pauseMs);
          out.wall1.push(wall);
        } else out.wall4.push(wall);
        for (const id of ids) {
          const u = (await api.getSandbox(id, { usage: true })).usage;
          if (u) out.childMiB.push(u.memoryBytes / 1048576);
        }
        await killAll(api, ids, ctx.log);
      }
    }
  } finally {
    await killAll(api, [src], ctx.log);
  }
  return out;
}

async function restores(api: ForkboxApi, runtime: Name, runs: number, ctx: BenchContext) {
  const src = (await api.createSandbox({ runtime })).id;
  const snap = await api.createSnapshot(src, {});
  await killAll(api, [src], ctx.log);
  const wall: number[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      const t0 = nowMs();
      const r = await api.restoreSnapshot(snap.id, { n: 1 });
      wall.push(nowMs() - t0);
      await killAll(
        api,
        r.children.flatMap((c) => (c.sandbox ? [c.sandbox.id] : [])),
        ctx.log,
      );
    }
  } finally {
    await api.deleteSnapshot(snap.id).catch(() => undefined);
  }
  return wall;
}

async function dockerFigures(ctx: BenchContext, runs: number, out: BenchResult) {
  const why = dockerPeerUnavailable();
  if (why) {
    out.notes.push(`docker peer skipped: ${why}`);
    return null;
  }
  let docker: DockerPeer | null = null;
  try {
    docker = await startDockerPeer(ctx.log);
    const run: number[] = [];
    for (let i = 0; i < runs; i++) run.push(await docker.runOnce(['true']));
    await docker.startSource('import os; b = bytearray(os.urandom(1 << 20)) * 100');
    const fork: number[] = [];
    for (let i = 0; i < Math.min(runs, HEAVY_RUNS_MAX); i++) {
      const f = await docker.fork(1);
      fork.push(f.wallMs);
      await docker.remove(f);
    }
    return { run, fork };
  } finally {
    await docker?.close();
  }
}

export const gvisorBench: Benchmark = {
  name: NAME,
  description:
    'the gvisor runtime vs native vs docker: create, exec, fork pause and wall, child memory, restore',
  async run(ctx: BenchContext) {
    const out = emptyResult();
    const s = ctx.surfaces[0];
    if (!s) throw new Error('no surface');
    if (!(await s.api.status()).runtimes.includes('gvisor')) {
      out.notes.push('skipped: this daemon has no gvisor runtime (runsc not installed: npm run setup)');
      return out;
    }
    const heavy = Math.min(ctx.runs, HEAVY_RUNS_MAX);
    const rows: Record<string, ReturnType<typeof row>> = {};
    for (const rt of RUNTIMES) {
      const ce = await createExec(s.api, rt, Math.min(ctx.runs, 10));
      rows[`${rt}-create`] = row(NAME, `${s.name} ${rt}: create → first exec`, 'ms', ce.create);
      rows[`${rt}-exec`] = row(NAME, `${s.name} ${rt}: exec true round trip`, 'ms', ce.exec);
      const f = await forks(s.api, rt, heavy, ctx);
      rows[`${rt}-pause`] = row(
        NAME,
        `${s.name} ${rt}: source pause, fork of a 100 MB process`,
        'ms',
        f.pause1,
      );
      rows[`${rt}-fork1`] = row(NAME, `${s.name} ${rt}: fork → 1 child running`, 'ms', f.wall1);
      rows[`${rt}-fork4`] = row(NAME, `${s.name} ${rt}: fork → 4 children running`, 'ms', f.wall4);
      rows[`${rt}-mem`] = row(NAME, `${s.name} ${rt}: memory per child (its cgroup)`, 'MiB', f.childMiB);
      rows[`${rt}-restore`] = row(
        NAME,
        `${s.name} ${rt}: snapshot restore → 1 running`,
        'ms',
        await restores(s.api, rt, heavy, ctx),
      );
    }
    const peer: number[] = [];
    for (let i = 0; i < Math.min(ctx.runs, 10); i++) peer.push((await ctx.peer.run(['/bin/true'])).totalMs);
    rows.peer = row(NAME, 'peer: cold runc run /bin/true', 'ms', peer);
    const docker = await dockerFigures(ctx, Math.min(ctx.runs, 10), out);
    if (docker) {
      rows.dockerRun = row(NAME, 'peer: docker run --rm true', 'ms', docker.run);
      rows.dockerFork = row(NAME, 'peer: docker commit + run of 1 child (100 MB process)', 'ms', docker.fork);
    }
    out.rows.push(...Object.values(rows));
    const r = (label: string, a: string, b: string) => {
      const x = rows[a];
      const y = rows[b];
      if (x && y) out.ratios.push(ratio(NAME, label, x, y));
    };
    for (const k of ['create', 'exec', 'pause', 'fork1', 'fork4', 'mem', 'restore'])
      r(`gvisor / native: ${k}`, `gvisor-${k}`, `native-${k}`);
    r('gvisor create / cold runc run', 'gvisor-create', 'peer');
    r('gvisor create / docker run', 'gvisor-create', 'dockerRun');
    r('gvisor fork of 1 / docker commit + run', 'gvisor-fork1', 'dockerFork');
    out.notes.push(
      'gvisor children each hold their own copy of the source memory (no copy-on-write between restores in this gVisor release): memory per child bounds N (about 24 GiB / that figure)',
    );
    return out;
  },
};
