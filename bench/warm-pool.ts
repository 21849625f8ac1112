/**
 * Create → first exec result (`true`) taken from the warm pool (service/warm-pool.ts; issue #14 item 6,
 * goal ≤ 15 ms p50): an in-process engine and a daemon (`forkbox serve --pool 4`), each against its own
 * create that the pool cannot serve (a name: a miss, a fresh sandbox), and `docker run --rm --network
 * none debian true` (a private dockerd, lib/docker-peer.ts) in the same run. Every sample follows an
 * idle gap and waits for the pool to be full again, so each take is a hit (checked in-process by the
 * pool's own counters); the refill is not in the figure — it is what a pool buys.
 */
import type { ForkboxApi } from '../src/service/api.ts';
import { type BenchContext, type Benchmark, execTrue, killAll } from './lib/context.ts';
import { type DockerPeer, dockerPeerUnavailable, startDockerPeer } from './lib/docker-peer.ts';
import { type DaemonHandle, type InProcessHandle, openInProcess, startDaemon } from './lib/env.ts';
import { emptyResult, ratio, row } from './lib/report.ts';
import { IDLE_GAP_MS, nowMs, sleep } from './lib/stats.ts';

const NAME = 'warm-pool';
const TARGET_MS = 15;
const POOL = 4;

/** Create → exec true → kill; the create → exec time in ms. */
async function sample(api: ForkboxApi, req: { name?: string }): Promise<number> {
  const t0 = nowMs();
  const { id } = await api.createSandbox(req);
  try {
    await execTrue(api, id);
    return nowMs() - t0;
  } finally {
    await api.killSandbox(id);
  }
}

export const warmPool: Benchmark = {
  name: NAME,
  description: 'create → first exec from a warm pool of 4, vs a create the pool cannot serve and docker run',
  async run(ctx: BenchContext) {
    const out = emptyResult();
    let inproc: InProcessHandle | null = null;
    let daemon: DaemonHandle | null = null;
    let docker: DockerPeer | null = null;
    const hit = { 'in-process': [] as number[], daemon: [] as number[] };
    const miss = { 'in-process': [] as number[], daemon: [] as number[] };
    const peer: number[] = [];
    try {
      inproc = await openInProcess(ctx.log, { poolSize: POOL });
      daemon = await startDaemon(ctx.log, ['--pool', String(POOL)]);
      const why = dockerPeerUnavailable();
      if (why === null) docker = await startDockerPeer(ctx.log);
      else out.notes.push(`docker peer skipped: ${why}`);
      const engine = inproc.opened.engine;
      const stats = () => engine.poolStats().find((s) => s.template === 'default');
      const full = async () => {
        for (let i = 0; i < 600 && (stats()?.size ?? 0) < POOL; i++) await sleep(10);
      };
      const surfaces: [keyof typeof hit, ForkboxApi][] = [
        ['in-process', inproc.opened.api],
        ['daemon', daemon.client],
      ];
      // Warm-up: the template starts and both pools fill (not measured).
      for (const [, api] of surfaces) await killAll(api, [(await api.createSandbox({})).id], ctx.log);
      await full();
      await sleep(2000);
      for (let i = 0; i < ctx.runs; i++) {
        for (const [name, api] of surfaces) {
          await full();
          await sleep(IDLE_GAP_MS);
          const before = stats()?.hits ?? 0;
          hit[name].push(await sample(api, {}));
          if (name === 'in-process' && (stats()?.hits ?? 0) !== before + 1)
            throw new Error('an in-process sample was not served from the pool');
          await full();
          await sleep(IDLE_GAP_MS);
          miss[name].push(await sample(api, { name: `pool-miss-${i}` }));
        }
        if (docker) {
          await sleep(IDLE_GAP_MS);
          peer.push(await docker.runOnce(['true']));
        }
      }
    } finally {
      await docker?.close().catch((e: unknown) => ctx.log(`${NAME}: docker cleanup failed: ${String(e)}`));
      await daemon?.stop().catch((e: unknown) => ctx.log(`${NAME}: daemon cleanup failed: ${String(e)}`));
      await inproc?.stop().catch((e: unknown) => ctx.log(`${NAME}: engine cleanup failed: ${String(e)}`));
    }
    const peerRow = docker ? row(NAME, 'peer: docker run --rm --network none debian true', 'ms', peer) : null;
    for (const name of ['in-process', 'daemon'] as const) {
      const h = row(NAME, `${name}: create → exec true, from the pool`, 'ms', hit[name], TARGET_MS);
      const m = row(NAME, `${name}: create → exec true, a miss (fresh)`, 'ms', miss[name]);
      out.rows.push(h, m);
      out.ratios.push(ratio(NAME, `${name} pool hit / miss`, h, m));
      if (peerRow) out.ratios.push(ratio(NAME, `${name} pool hit / docker run`, h, peerRow));
    }
    if (peerRow) out.rows.push(peerRow);
    return out;
  },
};
