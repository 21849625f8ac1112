/**
 * Image pull (issue 8): `forkbox images pull REF` as a whole CLI process, against a daemon with an empty
 * image store each time (a fresh daemon per sample, started outside the timing), against `skopeo copy
 * docker://REF dir:…` (Debian's skopeo) of the same image from the same registry — Debian's
 * docker-registry, started by the benchmark on 127.0.0.1 and filled with the default image's root as one
 * gzip layer (lib/bench-image.ts). skopeo only downloads and verifies the blobs; forkbox also unpacks the
 * layer and shifts it to the sandbox uid range, which is part of what a pull costs it. Samples are
 * interleaved so both sides see the same load. A second peer row adds GNU tar unpacking skopeo's
 * downloaded layer, the floor of what forkbox does on top of the download. Without skopeo the peer is skipped with a note.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { which } from '../src/util/subprocess.ts';
import { startRegistry } from '../test/helpers/registry.ts';
import { pushBenchImage } from './lib/bench-image.ts';
import type { BenchContext, Benchmark } from './lib/context.ts';
import { startDaemon, tmpDir } from './lib/env.ts';
import { emptyResult, ratio, row } from './lib/report.ts';
import { IDLE_GAP_MS, sleep } from './lib/stats.ts';
import { timedSpawn } from './lib/timed-spawn.ts';

const NAME = 'image-pull';
const BIN = resolve(import.meta.dirname, '..', 'bin', 'forkbox.js');

export const imagePull: Benchmark = {
  name: NAME,
  description: 'forkbox images pull from a local registry against skopeo copy of the same image',
  async run(ctx: BenchContext) {
    const out = emptyResult();
    const work = tmpDir('image-pull');
    const reg = await startRegistry(join(work, 'registry'));
    const skopeo = which('skopeo');
    const s = { forkbox: [] as number[], skopeo: [] as number[], unpack: [] as number[] };
    try {
      const img = await pushBenchImage(reg, work, 'bench/debian');
      ctx.log(`${NAME}: ${img.ref}, layer ${(img.compressedBytes / 2 ** 20).toFixed(1)} MiB gzip`);
      for (let i = 0; i < ctx.runs; i++) {
        const daemon = await startDaemon(ctx.log);
        try {
          await sleep(IDLE_GAP_MS);
          const r = await timedSpawn(
            process.execPath,
            [BIN, '--state-dir', daemon.surface.stateDir, '--json', 'images', 'pull', img.ref],
            { env: { ...process.env, FORKBOX_URL: '' } },
          );
          if (!r.stdout.includes('"layers"')) throw new Error(`forkbox images pull printed ${r.stdout}`);
          s.forkbox.push(r.ms);
        } finally {
          await daemon.stop();
        }
        if (skopeo !== null) {
          const dest = join(work, `skopeo-${i}`);
          await sleep(IDLE_GAP_MS);
          const r = await timedSpawn(skopeo, [
            'copy',
            '--quiet',
            '--src-tls-verify=false',
            `docker://${img.ref}`,
            `dir:${dest}`,
          ]);
          s.skopeo.push(r.ms);
          // The floor of what forkbox does on top: unpack the downloaded layer (GNU tar, as root).
          const root = join(dest, 'rootfs');
          mkdirSync(root);
          const blob = join(dest, img.layerDigest.replace(/^sha256:/, ''));
          const x = await timedSpawn('tar', ['-xzf', blob, '-C', root, '--numeric-owner']);
          s.unpack.push(r.ms + x.ms);
          rmSync(dest, { recursive: true, force: true });
        }
      }
      const f = row(NAME, 'forkbox images pull (CLI, empty store)', 'ms', s.forkbox);
      out.rows.push(f);
      if (skopeo !== null) {
        const k = row(NAME, 'peer: skopeo copy docker:// → dir:', 'ms', s.skopeo);
        const u = row(NAME, 'peer: skopeo copy, then tar -xzf of its layer', 'ms', s.unpack);
        out.rows.push(k, u);
        out.ratios.push(ratio(NAME, 'forkbox pull / skopeo copy', f, k));
        out.ratios.push(ratio(NAME, 'forkbox pull / (skopeo copy + tar -xzf)', f, u));
      } else out.notes.push('skopeo not found (Debian: apt-get install skopeo): the peer was skipped');
      out.notes.push(
        `image: one layer, ${(img.compressedBytes / 2 ** 20).toFixed(1)} MiB gzip (-1), ` +
          `${(img.tarBytes / 2 ** 20).toFixed(1)} MiB tar; forkbox unpacks and uid-shifts it, skopeo only stores the blobs`,
      );
    } finally {
      await reg.stop();
      rmSync(work, { recursive: true, force: true });
    }
    return out;
  },
};
