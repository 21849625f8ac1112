/**
 * Pulling an image from a registry into the layer store. Every blob the image needs is first downloaded
 * to a temp dir and verified (size and sha256); only then are the layers extracted (whiteouts converted,
 * owners shifted) and renamed into `<state>/layers/`, one directory per layer digest — a layer two images
 * share is downloaded and stored once — and last the image's metadata is written. A failed or refused
 * pull therefore changes nothing in the store; an interrupted one leaves temp files the next build sweeps
 * and whole layers the next pull of the image skips (resuming where it stopped).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ForkboxError } from '../domain/errors.ts';
import type { Logger } from '../domain/logger.ts';
import type { ImageRecord } from '../domain/types.ts';
import type { ProgressEvent } from '../service/api.ts';
import type { PullOptions } from '../service/ports.ts';
import type { ImageRecords } from './image-records.ts';
import { populate } from './import.ts';
import type { EnsureLayer } from './layer-build.ts';
import { findPythonInLayers } from './layers-python.ts';
import { imageAllowed } from './registry/allow.ts';
import { downloadBlob, readSmallBlob } from './registry/blob.ts';
import { createRegistryClient } from './registry/client.ts';
import { parseImageConfig } from './registry/image-config.ts';
import { type Descriptor, resolveManifest } from './registry/manifest.ts';
import { type ImageRef, localImageName, parseReference } from './registry/reference.ts';
import { convertWhiteouts } from './whiteout.ts';

export interface PullDeps {
  records: Pick<ImageRecords, 'get' | 'write'>;
  ensureLayer: EnsureLayer;
  shiftSalt: string;
  env: Readonly<Record<string, string | undefined>>;
  /** `forkbox serve --image-allow` patterns; none: local callers may pull anything, remote ones nothing. */
  allow: readonly string[];
  defaultEnv: Readonly<Record<string, string>>;
  /** Drop layers an image no longer names (after a tag moved). */
  dropUnused: (layers: readonly string[]) => void;
  log: Pick<Logger, 'info'>;
}

const LAYER_TYPES = new Set([
  'application/vnd.oci.image.layer.v1.tar',
  'application/vnd.oci.image.layer.v1.tar+gzip',
  'application/vnd.oci.image.layer.v1.tar+zstd',
  'application/vnd.docker.image.rootfs.diff.tar.gzip',
]);

/** Shortest gap between two byte-count progress events of one download. */
const BYTES_EVERY_MS = 250;

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

export interface Puller {
  /** The local name a reference is stored under (invalid references throw). */
  nameOf(refText: string): string;
  /** Pull `refText`; concurrent pulls of one reference share one pull. */
  pull(refText: string, o?: PullOptions): Promise<ImageRecord>;
}

export function createPuller(deps: PullDeps): Puller {
  const pulling = new Map<string, Promise<ImageRecord>>();
  const layerKey = (d: Descriptor) => sha(`oci-layer\0${d.digest}\0${deps.shiftSalt}`);

  function parse(refText: string, remote: boolean): ImageRef {
    const ref = parseReference(refText, deps.env.FORKBOX_DEFAULT_REGISTRY || undefined);
    if (!imageAllowed(ref, deps.allow, remote)) {
      throw new ForkboxError(
        'permission_denied',
        deps.allow.length === 0
          ? `pulling ${ref.canonical} is refused: this daemon lets remote callers pull only images its --image-allow patterns name, and it has none. Ask its operator to add one, or pull the image on the host.`
          : `pulling ${ref.canonical} is refused: it matches none of this daemon's --image-allow patterns (${deps.allow.join(', ')}). Ask its operator to allow it.`,
        { ref: ref.canonical },
      );
    }
    return ref;
  }

  async function run(ref: ImageRef, emit: (e: ProgressEvent) => void): Promise<ImageRecord> {
    const name = localImageName(ref);
    const insecure = (deps.env.FORKBOX_INSECURE_REGISTRIES ?? '').split(',').filter(Boolean);
    const client = createRegistryClient(ref, { env: deps.env, insecure });
    emit({ phase: 'resolving', message: `resolving ${ref.canonical}` });
    const m = await resolveManifest(client, ref);
    const id = sha(`oci\0${m.digest}\0${deps.shiftSalt}`);
    const existing = deps.records.get(name);
    if (existing?.id === id) {
      emit({ phase: 'done', message: `${ref.canonical} is up to date (${m.digest})` });
      return existing;
    }
    for (const l of m.layers) {
      if (!LAYER_TYPES.has(l.mediaType))
        throw new ForkboxError(
          'invalid_argument',
          `${ref.canonical} has a layer of type '${l.mediaType}', which forkbox cannot apply (it takes OCI or Docker tar, tar+gzip and tar+zstd layers).`,
          { ref: ref.canonical },
        );
    }
    const config = parseImageConfig(await readSmallBlob(client, ref, m.config), ref.canonical);
    await deps.ensureLayer.cleanStale();
    return deps.ensureLayer.withWorkDir(async (work) => {
      // 1. Download and verify every missing layer before anything enters the store.
      const blobs = new Map<string, string>();
      for (const [i, l] of m.layers.entries()) {
        if (existsSync(deps.ensureLayer.pathOf(layerKey(l))) || blobs.has(l.digest)) continue;
        const file = join(work, `${i}.blob`);
        const label = `layer ${i + 1}/${m.layers.length} ${l.digest.slice(7, 19)}`;
        emit({ phase: `download ${label}`, message: `downloading ${label}`, current: 0, total: l.size });
        // Byte counts at most every BYTES_EVERY_MS (and the last): a chunk each would flood the streams.
        let last = 0;
        await downloadBlob(client, ref, l, file, (n) => {
          const now = Date.now();
          if (n < l.size && now - last < BYTES_EVERY_MS) return;
          last = now;
          emit({ phase: `download ${label}`, message: label, current: n, total: l.size });
        });
        blobs.set(l.digest, file);
      }
      // 2. Extract each into its content-addressed layer directory (shared layers are already there).
      const layers: string[] = [];
      let sizeBytes = 0;
      for (const l of m.layers) {
        const blob = blobs.get(l.digest);
        const built = await deps.ensureLayer(
          layerKey(l),
          async (rootfs) => {
            if (!blob) throw new ForkboxError('internal', `layer ${l.digest} vanished during the pull`);
            await mkdir(rootfs, { mode: 0o755 });
            emit({ phase: 'extracting', message: `extracting ${l.digest.slice(7, 19)}` });
            await populate(blob, 'tar', rootfs).catch((e: unknown) => {
              throw new ForkboxError(
                'invalid_argument',
                `layer ${l.digest} of ${ref.canonical} cannot be applied safely, so the pull is refused: ${(e as Error).message.slice(0, 500)}`,
                { ref: ref.canonical, digest: l.digest },
              );
            });
            await convertWhiteouts(rootfs);
          },
          emit,
        );
        layers.unshift(built.layer);
        sizeBytes += built.sizeBytes;
      }
      const rec: ImageRecord = {
        name,
        id,
        layers,
        createdAt: Date.now(),
        sizeBytes,
        source: `registry:${ref.canonical}`,
        env: { ...(Object.keys(config.env).length > 0 ? {} : deps.defaultEnv), ...config.env },
        python: await findPythonInLayers(layers, work),
        ref: ref.canonical,
        digest: m.digest,
        config: {
          workingDir: config.workingDir,
          user: config.user,
          entrypoint: config.entrypoint,
          cmd: config.cmd,
        },
      };
      deps.records.write(rec);
      if (existing) deps.dropUnused(existing.layers);
      deps.log.info({ image: name, ref: ref.canonical, digest: m.digest }, 'images: pulled');
      emit({ phase: 'done', message: `${ref.canonical} pulled as '${name}' (${m.digest})` });
      return rec;
    });
  }

  return {
    nameOf: (refText: string) =>
      localImageName(parseReference(refText, deps.env.FORKBOX_DEFAULT_REGISTRY || undefined)),
    async pull(refText: string, o: PullOptions = {}): Promise<ImageRecord> {
      const ref = parse(refText, o.remote === true);
      const running = pulling.get(ref.canonical);
      if (running) return running;
      const p = run(ref, o.onProgress ?? (() => {}));
      pulling.set(ref.canonical, p);
      const clear = () => pulling.delete(ref.canonical);
      p.then(clear, clear);
      return p;
    },
  };
}
