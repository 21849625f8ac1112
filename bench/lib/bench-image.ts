/**
 * An image for the image benchmarks, in a registry the benchmark started (test/helpers/registry.ts):
 * the default image's root filesystem as one gzip layer (owners set back to root, as the image tests
 * do), with a config whose `rootfs.diff_ids` names the uncompressed layer, so that Docker and skopeo take
 * it as well as forkbox. Built once per benchmark under its temp dir.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, rmSync, statSync } from 'node:fs';
import {
  LAYER_GZ,
  OCI_CONFIG,
  OCI_MANIFEST,
  type TestRegistry,
  tarLayerDir,
} from '../../test/helpers/registry.ts';
import { defaultImage } from './env.ts';

export interface BenchImage {
  /** `127.0.0.1:<port>/repo:tag`, straight at the registry (no proxy in this process). */
  ref: string;
  /** The layer's size as downloaded (gzip) and as unpacked (tar). */
  compressedBytes: number;
  tarBytes: number;
  /** The layer blob's digest (`sha256:…`). */
  layerDigest: string;
}

async function sha256File(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const c of createReadStream(file)) h.update(c as Buffer);
  return `sha256:${h.digest('hex')}`;
}

export async function pushBenchImage(reg: TestRegistry, work: string, repo: string): Promise<BenchImage> {
  const [layerDir] = defaultImage().layers;
  if (layerDir === undefined) throw new Error('the default image has no layer');
  const tar = tarLayerDir(work, layerDir);
  const tarBytes = statSync(tar).size;
  const diffId = await sha256File(tar);
  // gzip -1: the set-up stays short on a shared machine; unpacking speed barely depends on the level.
  const gz = spawnSync('gzip', ['-1', '-f', tar]);
  if (gz.status !== 0) throw new Error(`gzip ${tar}: ${String(gz.stderr)}`);
  const layer = await reg.pushBlob(repo, `${tar}.gz`, LAYER_GZ);
  rmSync(`${tar}.gz`, { force: true });
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const config = await reg.pushJson(
    repo,
    {
      architecture: arch,
      os: 'linux',
      config: { Env: [`PATH=${defaultImage().env.PATH ?? '/usr/bin:/bin'}`], Cmd: ['/bin/sh'] },
      rootfs: { type: 'layers', diff_ids: [diffId] },
    },
    OCI_CONFIG,
  );
  await reg.pushManifest(
    repo,
    'v1',
    { schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers: [layer] },
    OCI_MANIFEST,
  );
  return {
    ref: `${reg.upstream}/${repo}:v1`,
    compressedBytes: layer.size,
    tarBytes,
    layerDigest: layer.digest,
  };
}
