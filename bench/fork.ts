/**
 * (6) Forking a running sandbox, per storage driver (btrfs when usable here, and copy), each on its own
 * in-process engine and state dir: wall time of a fork into 1, 10 and 100 children; the source's pause
 * window (`pauseMs`) with 0, 30 and 300 MB freshly written in its upper; USS / PSS per idle child of a
 * fork of 100. Children get 64 MiB limits (100 × the 1 GiB default would exceed host admission).
 * Peer: `docker commit` + `docker run` of an equivalent container (Debian's docker.io, a private dockerd
 * started for it), skipped with a note when docker.io is not installed. Also: restore from a snapshot.
 */
import { rmSync } from 'node:fs';
import { openEngine } from '../src/composition.ts';
import { planStorage } from '../src/runtimes/native/layers/btrfs-storage.ts';
import type { ForkboxApi } from '../src/service/api.ts';
import { type BenchContext, type Benchmark, killAll } from './lib/context.ts';
import { type DockerPeer, dockerPeerUnavailable, startDockerPeer } from './lib/docker-peer.ts';
import { makeStateDir } from './lib/env.ts';
import { cgroupPids, processesMemory, sandboxCgroup } from './lib/procmem.ts';
import { emptyResult, ratio, row } from './lib/report.ts';
import { nowMs, sleep } from './lib/stats.ts';

const NAME = 'fork';
const CHILD_MB = 64;
const MIB_KB = 1024;
const SETTLE_MS = 1000;
/** Fewer samples for the big fork: each one makes and kills 100 sandboxes. */
const BIG_RUNS_MAX = 10;

const kids = (n: number) => (n === 1 ? '1 child' : `${n} children`);

const quiet = {
  debug: () => undefined,
  info: () => undefined,
  warn: (o: object | string, m?: string) =>
    process.stderr.write(`[fork warn] ${JSON.stringify(o)} ${m ?? ''}\n`),
  error: (o: object | string, m?: string) =>
    process.stderr.write(`[fork error] ${JSON.stringify(o)} ${m ?? ''}\n`),
};

async function fork(api: ForkboxApi, src: string, n: number) {
  const t0 = nowMs();
  const r = await api.forkSandbox(src, { n, memoryMb: CHILD_MB });
  const wallMs = nowMs() - t0;
  const ids = r.children.flatMap((c) => (c.sandbox ? [c.sandbox.id] : []));
  if (ids.length !== n) throw new Error(`fork of ${n} made ${ids.length}: ${JSON.stringify(r.children)}`);
  return { wallMs, pauseMs: r.pauseMs, snapshotMs: r.snapshotMs ?? Number.NaN, ids, driver: r.driver };
}

async function sh(api: ForkboxApi, id: string, cmd: string): Promise<void> {
  const r = await api.exec(id, { cmd, timeoutSeconds: 120 });
  if (r.exitCode !== 0) throw new Error(`${cmd} exited ${r.exitCode}: ${r.stderr}`);
}

async function runDriver(ctx: BenchContext, storage: 'btrfs' | 'copy', out: ReturnType<typeof emptyResult>) {
  const stateDir = makeStateDir(`fork-${storage}`);
  const opened = await openEngine({ stateDir, log: quiet, reapIntervalMs: 0, storage });
  const api = opened.api;
  const runs = Math.max(10, ctx.runs);
  const bigRuns = Math.min(runs, BIG_RUNS_MAX);
  const tag = `${storage}`;
  try {
    const src = (await api.createSandbox({ name: `fork-src-${storage}`, memoryMb: 1536 })).id;
    await api.runCode(src, { code: 'import json, random\nstate = list(range(100_000))' });
    // Warm-up: the first fork pays for page-table and dentry caches on both sides.
    await killAll(api, (await fork(api, src, 1)).ids, ctx.log);

    for (const n of [1, 10, 100]) {
      const wall: number[] = [];
      const pause: number[] = [];
      const k = n === 100 ? bigRuns : runs;
      for (let i = 0; i < k; i++) {
        await sleep(100);
        const f = await fork(api, src, n);
        wall.push(f.wallMs);
        pause.push(f.pauseMs);
        if (n === 100 && i === 0) {
          // Memory per idle child: each child's PID 1 and REPL worker, copy-on-write with the source.
          await sleep(SETTLE_MS);
          const figs = f.ids.map((id) => processesMemory(cgroupPids(sandboxCgroup(id))));
          out.rows.push(
            row(
              NAME,
              `${tag}: USS per idle child (100 live)`,
              'MiB',
              figs.map((x) => x.ussKb / MIB_KB),
              2,
            ),
            row(
              NAME,
              `${tag}: PSS per idle child (100 live)`,
              'MiB',
              figs.map((x) => x.pssKb / MIB_KB),
            ),
          );
          out.notes.push(
            `${tag}: processes per idle child: ${[...new Set(figs.map((x) => x.procs))].join(', ')}`,
          );
        }
        await killAll(api, f.ids, ctx.log);
      }
      const target = n === 100 ? 250 : undefined;
      out.rows.push(row(NAME, `${tag}: fork → ${kids(n)}, wall`, 'ms', wall, target));
      if (n === 1) out.rows.push(row(NAME, `${tag}: fork → 1 child, source pause`, 'ms', pause));
      ctx.log(
        `${tag}: fork of ${n}: p50 ${wall.sort((a, b) => a - b)[Math.floor(wall.length / 2)]?.toFixed(1)} ms`,
      );
    }

    // Restore: a snapshot holds the frozen files and a paused copy of the REPL; each restore forks it.
    const snap = await api.createSnapshot(src, { name: `bench-${storage}` });
    const restore: number[] = [];
    for (let i = 0; i < runs; i++) {
      await sleep(100);
      const t0 = nowMs();
      const r = await api.restoreSnapshot(snap.id, { n: 1, memoryMb: CHILD_MB });
      restore.push(nowMs() - t0);
      const ids = r.children.flatMap((c) => (c.sandbox ? [c.sandbox.id] : []));
      if (ids.length !== 1)
        throw new Error(`restore made ${ids.length} sandboxes: ${JSON.stringify(r.children)}`);
      await killAll(api, ids, ctx.log);
    }
    await api.deleteSnapshot(snap.id);
    out.rows.push(row(NAME, `${tag}: restore from snapshot → 1 sandbox, wall`, 'ms', restore));

    // The fork syncs the source's upper before its pause (forkSandbox), so data written just before a
    // fork is flushed outside the pause window.
    for (const mb of [0, 30, 300]) {
      const pause: number[] = [];
      for (let i = 0; i < runs; i++) {
        // The upper holds `mb` MB just written (dirty in the page cache) when the fork starts.
        await sh(
          api,
          src,
          `rm -f /root/blob; ${mb > 0 ? `head -c ${mb}M /dev/urandom > /root/blob` : 'true'}`,
        );
        const f = await fork(api, src, 1);
        pause.push(f.pauseMs);
        await killAll(api, f.ids, ctx.log);
      }
      const target = storage === 'btrfs' && mb === 300 ? 10 : undefined;
      out.rows.push(row(NAME, `${tag}: source pause, ${mb} MB just written`, 'ms', pause, target));
    }
  } finally {
    await opened.close({ killSandboxes: true });
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** The same forks with Docker: `docker commit` of a running container + `docker run` per child. */
async function runDocker(ctx: BenchContext, out: ReturnType<typeof emptyResult>): Promise<void> {
  const why = dockerPeerUnavailable();
  if (why !== null) {
    out.notes.push(`peer docker commit + docker run skipped: ${why}`);
    return;
  }
  let peer: DockerPeer;
  try {
    peer = await startDockerPeer(ctx.log);
  } catch (e) {
    out.notes.push(`peer docker commit + docker run skipped: ${e instanceof Error ? e.message : String(e)}`);
    return;
  }
  try {
    await peer.startSource(`import time\nstate = list(range(100_000))\ntime.sleep(10**9)`);
    for (const n of [1, 10]) {
      const wall: number[] = [];
      const commit: number[] = [];
      const k = n === 1 ? Math.max(10, ctx.runs) : 10;
      for (let i = 0; i < k; i++) {
        await sleep(100);
        const f = await peer.fork(n);
        wall.push(f.wallMs);
        commit.push(f.commitMs);
        await peer.remove(f);
      }
      out.rows.push(row(NAME, `docker: commit + run → ${kids(n)}, wall`, 'ms', wall));
      if (n === 1) out.rows.push(row(NAME, 'docker: commit alone (source paused)', 'ms', commit));
    }
  } finally {
    await peer.close();
  }
  // forkbox / docker, for the driver measured first (btrfs when usable).
  for (const n of [1, 10]) {
    const fb = out.rows.find((r) => r.label.endsWith(`fork → ${kids(n)}, wall`));
    const dk = out.rows.find((r) => r.label === `docker: commit + run → ${kids(n)}, wall`);
    if (fb && dk) out.ratios.push(ratio(NAME, `${fb.label} / ${dk.label}`, fb, dk));
  }
}

export const forkBench: Benchmark = {
  name: NAME,
  description:
    'fork a running sandbox into 1 / 10 / 100 children, pause window, memory per child, per driver',
  async run(ctx) {
    const out = emptyResult();
    const plan = planStorage('/var/tmp', { FORKBOX_STORAGE: 'auto' });
    const drivers: ('btrfs' | 'copy')[] = plan.driver === 'btrfs' ? ['btrfs', 'copy'] : ['copy'];
    if (plan.driver !== 'btrfs') out.notes.push(`btrfs driver skipped: ${plan.reason}`);
    for (const d of drivers) {
      ctx.log(`fork: ${d} driver`);
      await runDriver(ctx, d, out);
    }
    await runDocker(ctx, out);
    return out;
  },
};
