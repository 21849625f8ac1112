/**
 * The image store: `<stateDir>/layers/<id>/` (read-only, uid-shifted layer roots), `<stateDir>/images/<name>.json`
 * (metadata, written atomically) and `<stateDir>/tmp/` (builds in progress). A layer directory appears only by
 * a rename after it is complete, and metadata is written only after that, so a crash never registers half an image.
 * Metadata is image-records.ts, building a layer layer-build.ts; this file builds, imports and removes images.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { errors, ForkboxError } from '../domain/errors.ts';
import { type Logger, silentLogger } from '../domain/logger.ts';
import type { ImageRecord } from '../domain/types.ts';
import type { ProgressEvent } from '../service/api.ts';
import type { BuildDebianOptions, ImageStore, PullOptions } from '../service/ports.ts';
import { getXattr, setXattr } from '../util/fs-calls.ts';
import { mountsUnder } from '../util/mountinfo.ts';
import { requireTools } from '../util/subprocess.ts';
import { aptInstall, BROWSER_IMAGE, BROWSER_PACKAGES } from './apt-install.ts';
import { readAptMirror } from './apt-mirror.ts';
import {
  DEFAULT_PACKAGES,
  DEFAULT_SUITE,
  debootstrap,
  VARIANT,
  validPackageName,
  validSuite,
} from './debootstrap.ts';
import { findPython } from './fsutil.ts';
import { createImageRecords, type ImageRecords, validateImageName } from './image-records.ts';
import { contentKey, populate, sourceKind } from './import.ts';
import { createLayerBuilder, type EnsureLayer, LAYER_ID_LEN, tmpName } from './layer-build.ts';
import { createPuller } from './pull.ts';
import { isRegistryRef } from './registry/reference.ts';
import { dropDeviceNodes, type UidShift } from './shift.ts';
import { convertWhiteouts } from './whiteout.ts';

/** Marks a layer swept of device nodes (the trusted namespace: no sandbox reads or writes it). */
const NODEV_XATTR = 'trusted.forkbox.nodev';

export interface ImageStoreOptions {
  stateDir: string;
  uidShift?: UidShift;
  log?: Pick<Logger, 'info' | 'warn'>;
  /**
   * The daemon's settings: FORKBOX_DEBIAN_MIRROR (apt-mirror.ts; none: the host's apt sources decide),
   * FORKBOX_DEFAULT_REGISTRY, FORKBOX_INSECURE_REGISTRIES, DOCKER_CONFIG and HOME (pulls).
   */
  env?: Readonly<Record<string, string | undefined>>;
  /** `forkbox serve --image-allow` patterns (registry/allow.ts). */
  imageAllow?: readonly string[];
}

export { validateImageName } from './image-records.ts';

export const DEFAULT_UID_SHIFT: UidShift = { hostStart: 100000, size: 65536 };
export const DEFAULT_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  LANG: 'C.UTF-8',
  HOME: '/root',
};

function conflict(name: string, existing: ImageRecord): ForkboxError {
  return new ForkboxError(
    'already_exists',
    `image '${name}' already exists with different content (from ${existing.source}). Remove it first with 'forkbox images rm ${name}', or pick another name.`,
    { image: name },
  );
}

/** Delete those of `layers` no image names any more (and nothing mounts inside). */
function dropUnusedLayers(
  layers: readonly string[],
  d: { records: ImageRecords; layersDir: string; tmpDir: string; log: Pick<Logger, 'warn'> },
): void {
  const { records, layersDir, tmpDir, log } = d;
  const inUse = records.layersInUse();
  for (const layer of layers) {
    // Only ever delete inside our own layers directory, whatever the metadata file says.
    if (inUse.has(layer) || !resolve(layer).startsWith(layersDir + sep)) continue;
    if (mountsUnder(layer).length > 0) {
      log.warn({ layer }, 'images: keeping a layer: something is mounted inside it');
      continue;
    }
    // Rename first (atomic): a crash mid-delete leaves junk in tmp/, never a half layer that a later
    // build with the same key would take for complete.
    const doomed = join(tmpDir, tmpName());
    try {
      renameSync(layer, doomed);
    } catch {
      continue;
    }
    rmSync(doomed, { recursive: true, force: true });
  }
}

/**
 * What a crash left: work dirs of builds, imports and pulls and half-deleted layers in tmp/, and image
 * records written but never renamed into place (`.<name>.<hex>.tmp`; written and renamed in one
 * synchronous step, so none is ever in flight).
 */
async function sweepTemps(ensureLayer: EnsureLayer, imagesDir: string): Promise<string[]> {
  const removed = await ensureLayer.sweepTemps();
  for (const n of readdirSync(imagesDir)) {
    if (!/^\..+\.tmp$/.test(n)) continue;
    rmSync(join(imagesDir, n), { force: true });
    removed.push(join(imagesDir, n));
  }
  return removed;
}

export function createImageStore(opts: ImageStoreOptions): ImageStore {
  const stateDir = resolve(opts.stateDir);
  const shift = opts.uidShift ?? DEFAULT_UID_SHIFT;
  const log = opts.log ?? silentLogger;
  const layersDir = join(stateDir, 'layers');
  const imagesDir = join(stateDir, 'images');
  const tmpDir = join(stateDir, 'tmp');
  // 0700: layers hold files owned by sandbox uids (some setuid); nobody but root needs to walk into them
  // from the host side — overlay mounts reference them by path, as root.
  for (const d of [stateDir, layersDir, imagesDir, tmpDir]) mkdirSync(d, { recursive: true, mode: 0o700 });
  const shiftSalt = `${shift.hostStart}:${shift.size}`;
  const dropUnused = (layers: readonly string[]) =>
    dropUnusedLayers(layers, { records, layersDir, tmpDir, log });

  const records = createImageRecords(imagesDir, log);
  const { list } = records;
  const ensureLayer = createLayerBuilder({ layersDir, tmpDir, shift, records, log });
  const puller = createPuller({
    records,
    ensureLayer,
    shiftSalt,
    env: opts.env ?? {},
    allow: opts.imageAllow ?? [],
    defaultEnv: DEFAULT_ENV,
    dropUnused: (layers) => dropUnused(layers),
    log,
  });

  /** A local image name, or a registry reference to an image pulled before. */
  function get(nameOrRef: string): ImageRecord | undefined {
    if (!isRegistryRef(nameOrRef)) return records.get(nameOrRef);
    try {
      return records.get(puller.nameOf(nameOrRef));
    } catch {
      return undefined;
    }
  }
  function requireImage(nameOrRef: string): ImageRecord {
    const rec = get(nameOrRef);
    if (rec) return rec;
    if (!isRegistryRef(nameOrRef)) throw errors.imageNotFound(nameOrRef);
    puller.nameOf(nameOrRef); // a malformed reference says so
    throw new ForkboxError(
      'not_found',
      `image ${nameOrRef} has not been pulled. Pull it with 'forkbox images pull ${nameOrRef}'.`,
      { image: nameOrRef },
    );
  }

  /** Build (or reuse) the layer for `key`, then register it as `name`; cached when `name` already has `key`. */
  async function materialize(
    name: string,
    key: string,
    source: string,
    fill: (rootfs: string) => Promise<void>,
    emit: (e: ProgressEvent) => void,
    signal?: AbortSignal,
    replacing?: ImageRecord,
  ): Promise<ImageRecord> {
    const existing = get(name);
    if (existing?.id === key) {
      emit({ phase: 'done', message: `image '${name}' is up to date (cached)` });
      return existing;
    }
    if (existing && existing !== replacing && existing.id !== replacing?.id) throw conflict(name, existing);
    const { layer, sizeBytes } = await ensureLayer(key, fill, emit, signal);
    const rec: ImageRecord = {
      name,
      id: key,
      layers: [layer],
      createdAt: Date.now(),
      sizeBytes,
      source,
      env: { ...DEFAULT_ENV },
      python: await findPython(layer),
    };
    // Re-check after the awaits: a concurrent call may have registered this name meanwhile. From here to
    // the write everything is synchronous, so nothing can interleave.
    const now = get(name);
    if (now?.id === key) return now;
    if (now && now.id !== replacing?.id) throw conflict(name, now);
    records.write(rec);
    if (now) {
      dropUnused(now.layers);
      log.info({ image: name, old: now.id, new: key }, 'images: replaced an image built from another recipe');
    }
    emit({ phase: 'done', message: `image '${name}' ready (${rec.id.slice(0, LAYER_ID_LEN)})` });
    log.info({ image: name, source, layer }, 'images: registered');
    return rec;
  }

  async function buildDebian(o: BuildDebianOptions): Promise<ImageRecord> {
    const suite = o.suite ?? DEFAULT_SUITE;
    if (!validSuite(suite))
      throw errors.invalid(`invalid Debian suite '${suite}' (e.g. 'bookworm').`, { suite });
    for (const p of o.packages ?? []) {
      if (!validPackageName(p)) throw errors.invalid(`invalid Debian package name '${p}'.`, { package: p });
    }
    const packages = [...new Set([...DEFAULT_PACKAGES, ...(o.packages ?? [])])].sort();
    const isDefault = suite === DEFAULT_SUITE && packages.length === DEFAULT_PACKAGES.length;
    // The browser variant: Chromium and its fonts, installed by apt after debootstrap (apt-install.ts).
    const extra = o.browser === true ? [...BROWSER_PACKAGES] : [];
    const mirror = readAptMirror(suite, { env: opts.env ?? {} });
    const key = createHash('sha256')
      .update(
        JSON.stringify({
          kind: 'debootstrap',
          suite,
          variant: VARIANT,
          packages,
          mirror,
          shift: shiftSalt,
          ...(extra.length > 0 ? { apt: extra } : {}),
        }),
      )
      .digest('hex');
    const name =
      o.name ?? (isDefault ? (extra.length > 0 ? BROWSER_IMAGE : 'debian') : `debian-${key.slice(0, 8)}`);
    validateImageName(name);
    const emit = o.onProgress ?? (() => {});
    const cached = get(name);
    if (cached?.id !== key && !existsSync(join(layersDir, key.slice(0, LAYER_ID_LEN)))) {
      requireTools(['debootstrap']);
    }
    // The same name built from another recipe (forkbox's default package list changed since): replaced
    // when the caller allows it (no live sandbox or snapshot on it), never an image from elsewhere.
    let replacing: ImageRecord | undefined;
    if (cached && cached.id !== key && cached.source.startsWith('debootstrap:') && o.mayReplace) {
      o.mayReplace(cached);
      replacing = cached;
      emit({ phase: 'replacing', message: `image '${name}' was built from another recipe: rebuilding it` });
    }
    return materialize(
      name,
      key,
      `debootstrap:${suite}`,
      async (rootfs) => {
        const run = { onProgress: emit, log, ...(o.signal ? { signal: o.signal } : {}) };
        await debootstrap({ suite, packages, mirror, target: rootfs, ...run });
        await aptInstall({ target: rootfs, packages: extra, ...run });
      },
      emit,
      o.signal,
      replacing,
    );
  }

  async function importImage(
    name: string,
    source: string,
    o: { onProgress?: (e: ProgressEvent) => void } = {},
  ): Promise<ImageRecord> {
    validateImageName(name);
    const emit = o.onProgress ?? (() => {});
    const abs = resolve(source);
    const kind = await sourceKind(abs);
    emit({ phase: 'hashing', message: `computing the content key of ${abs}` });
    const key = await contentKey(abs, kind, shiftSalt);
    if (get(name)?.id !== key) requireTools([kind === 'tar' ? 'tar' : 'cp']);
    return materialize(
      name,
      key,
      `import:${abs}`,
      async (rootfs) => {
        await mkdir(rootfs, { mode: 0o755 });
        emit({
          phase: kind === 'tar' ? 'extracting' : 'copying',
          message: `${kind === 'tar' ? 'extracting' : 'copying'} ${abs}`,
        });
        await populate(abs, kind, rootfs);
        const w = await convertWhiteouts(rootfs);
        if (w.whiteouts + w.opaque > 0) {
          emit({
            phase: 'whiteouts',
            message: `converted ${w.whiteouts} whiteouts and ${w.opaque} opaque markers`,
          });
        }
      },
      emit,
    );
  }

  function remove(nameOrRef: string): void {
    const rec = requireImage(nameOrRef);
    records.unlink(rec.name);
    dropUnused(rec.layers);
    log.info({ image: rec.name }, 'images: removed');
  }

  async function ensure(nameOrRef: string, o: PullOptions = {}): Promise<ImageRecord> {
    return get(nameOrRef) ?? (isRegistryRef(nameOrRef) ? puller.pull(nameOrRef, o) : requireImage(nameOrRef));
  }

  /** Layers of every image, each swept of device nodes once (marked with an xattr sandboxes cannot see). */
  async function sweepDeviceNodes(): Promise<number> {
    let dropped = 0;
    for (const layer of new Set(list().flatMap((r) => r.layers))) {
      if (!existsSync(layer) || getXattr(layer, NODEV_XATTR) !== null) continue;
      const n = await dropDeviceNodes(layer);
      setXattr(layer, NODEV_XATTR, Buffer.from('1'));
      if (n > 0)
        log.info(
          { layer, devices: n },
          'images: removed device nodes from a layer made before they were dropped',
        );
      dropped += n;
    }
    return dropped;
  }

  return {
    list,
    get,
    require: requireImage,
    sweepTemps: () => sweepTemps(ensureLayer, imagesDir),
    buildDebian,
    importImage,
    pull: puller.pull,
    ensure,
    remove,
    sweepDeviceNodes,
  };
}
