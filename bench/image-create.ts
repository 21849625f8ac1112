/**
 * Create → first exec on a pulled image (issue 8): the image of lib/bench-image.ts, pulled once from a
 * registry the benchmark started, then per sample `createSandbox({ image: REF })` → `exec true` answered,
 * through each surface from a long-lived client, and `forkbox run --image REF -- true` as a whole CLI
 * process; against `docker run --rm --network none REF true` (a private dockerd from Debian's docker.io,
 * lib/docker-peer.ts, which pulled the same image from the same registry), also a whole process. The
 * first create of an image starts its template and is reported apart. Without docker the peer is skipped
 * with a note.
 */
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startRegistry } from '../test/helpers/registry.ts';
import { pushBenchImage } from './lib/bench-image.ts';
import { type BenchContext, type Benchmark, execTrue, killAll } from './lib/context.ts';
import { type DockerPeer, dockerPeerUnavailable, startDockerPeer } from './lib/docker-peer.ts';
import { tmpDir } from './lib/env.ts';
import { emptyResult, ratio, row } from './lib/report.ts';
import { IDLE_GAP_MS, nowMs, sleep } from './lib/stats.ts';
import { timedSpawn } from './lib/timed-spawn.ts';

const NAME = 'image-create';
const BIN = resolve(import.meta.dirname, '..', 'bin', 'forkbox.js');

export const imageCreate: Benchmark = {
  name: NAME,
  description: 'create → first exec on a pulled registry image against docker run --rm of the same image',
  async run(ctx: BenchContext) {
    const out = emptyResult();
    const work = tmpDir('image-create');
    const reg = await startRegistry(join(work, 'registry'));
    let docker: DockerPeer | null = null;
    const api = new Map(ctx.surfaces.map((s) => [s.name, [] as number[]]));
    const first = new Map<string, number>();
    const cli: number[] = [];
    const peer: number[] = [];
    try {
      const img = await pushBenchImage(reg, work, 'bench/debian');
      const why = dockerPeerUnavailable();
      if (why === null) {
        docker = await startDockerPeer(ctx.log, { importDefault: false });
        ctx.log(`${NAME}: docker pull took ${(await docker.pull(img.ref)).toFixed(0)} ms`);
      } else out.notes.push(`docker peer skipped: ${why}`);
      for (const s of ctx.surfaces) {
        await s.api.pullImage(img.ref);
        const t0 = nowMs();
        const id = (await s.api.createSandbox({ image: img.ref })).id;
        await execTrue(s.api, id);
        first.set(s.name, nowMs() - t0);
        await killAll(s.api, [id], ctx.log);
      }
      const daemonDir = ctx.surfaces.find((s) => s.name === 'daemon')?.stateDir;
      for (let i = 0; i < ctx.runs; i++) {
        for (const s of ctx.surfaces) {
          await sleep(IDLE_GAP_MS);
          const t0 = nowMs();
          const id = (await s.api.createSandbox({ image: img.ref })).id;
          await execTrue(s.api, id);
          api.get(s.name)?.push(nowMs() - t0);
          await killAll(s.api, [id], ctx.log);
        }
        if (daemonDir !== undefined) {
          await sleep(IDLE_GAP_MS);
          const r = await timedSpawn(
            process.execPath,
            [BIN, '--state-dir', daemonDir, 'run', '--image', img.ref, '--', 'true'],
            { env: { ...process.env, FORKBOX_URL: '' }, timeoutMs: 60_000 },
          );
          cli.push(r.ms);
        }
        if (docker !== null) {
          await sleep(IDLE_GAP_MS);
          peer.push(await docker.runImage(img.ref, ['true']));
        }
      }
    } finally {
      await docker?.close().catch((e: unknown) => ctx.log(`${NAME}: docker cleanup failed: ${String(e)}`));
      await reg.stop();
      rmSync(work, { recursive: true, force: true });
    }
    const peerRow = docker !== null ? row(NAME, 'peer: docker run --rm REF true (CLI)', 'ms', peer) : null;
    for (const [name, samples] of api) {
      const r = row(NAME, `${name}: create --image REF → exec true`, 'ms', samples);
      out.rows.push(r);
      if (peerRow) out.ratios.push(ratio(NAME, `${name} create → exec / docker run`, r, peerRow));
    }
    if (cli.length > 0) {
      const r = row(NAME, 'forkbox run --image REF -- true (CLI)', 'ms', cli);
      out.rows.push(r);
      if (peerRow)
        out.ratios.push(ratio(NAME, 'forkbox run / docker run (both whole CLI processes)', r, peerRow));
    }
    if (peerRow) out.rows.push(peerRow);
    for (const [name, ms] of first)
      out.notes.push(
        `${name}: the first create → exec of the image (its template starts) took ${ms.toFixed(0)} ms`,
      );
    return out;
  },
};
