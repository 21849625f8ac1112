/**
 * The image store: `<stateDir>/layers/<id>/` (read-only, uid-shifted layer roots), `<stateDir>/images/<name>.json`
 * (metadata, written atomically) and `<stateDir>/tmp/` (builds in progress). A layer directory appears only by
 * a rename after it is complete, and metadata is written only after that, so a crash never registers half an image.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { mkdir, readdir, rename } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { errors, ForkboxError } from '../domain/errors.ts';
import type { ImageRecord } from '../domain/types.ts';
import type { ProgressEvent } from '../service/api.ts';
import type { BuildDebianOptions, ImageStore } from '../service/ports.ts';
import { readAptMirror } from './apt-mirror.ts';
import {
  DEFAULT_PACKAGES,
  DEFAULT_SUITE,
  debootstrap,
  VARIANT,
  validPackageName,
  validSuite,
} from './debootstrap.ts';
import { mountsUnder } from '../util/mountinfo.ts';
import { findPython, removeTree, treeBytes } from './fsutil.ts';
import { contentKey, populate, sourceKind } from './import.ts';
import { requireTools } from '../util/subprocess.ts';
import { shiftTree, type UidShift } from './shift.ts';
import { convertWhiteouts } from './whiteout.ts';

export interface ImageStoreOptions {
  stateDir: string;
  uidShift?: UidShift;
  log?: (msg: string) => void;
}

export const DEFAULT_UID_SHIFT: UidShift = { hostStart: 100000, size: 65536 };
export const DEFAULT_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  LANG: 'C.UTF-8',
  HOME: '/root',
};
/** Layer ids stay short: overlay's lowerdir option list must fit in one page. */
const LAYER_ID_LEN = 12;
const TMP_PREFIX = 'img-';
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Build directories carry their process id, so a cleanup never touches another live process's build. */
function tmpName(): string {
  return `${TMP_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}`;
}

function ownerAlive(name: string): boolean {
  const pid = Number(/^img-(\d+)-/.exec(name)?.[1]);
  // Our own pid here is a previous process's: cleanup runs once, before this process starts any build.
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function validateImageName(name: string): void {
  if (!NAME_RE.test(name)) {
    throw errors.invalid(
      `invalid image name '${name}': use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit.`,
      { name },
    );
  }
}

export function createImageStore(opts: ImageStoreOptions): ImageStore {
  const stateDir = resolve(opts.stateDir);
  const shift = opts.uidShift ?? DEFAULT_UID_SHIFT;
  const log = opts.log ?? (() => {});
  const layersDir = join(stateDir, 'layers');
  const imagesDir = join(stateDir, 'images');
  const tmpDir = join(stateDir, 'tmp');
  // 0700: layers hold files owned by sandbox uids (some setuid); nobody but root needs to walk into them
  // from the host side — overlay mounts reference them by path, as root.
  for (const d of [stateDir, layersDir, imagesDir, tmpDir]) mkdirSync(d, { recursive: true, mode: 0o700 });
  const shiftSalt = `${shift.hostStart}:${shift.size}`;
  const building = new Map<string, Promise<{ layer: string; sizeBytes: number }>>();
  let staleCleaned: Promise<void> | undefined;

  const metaPath = (name: string) => join(imagesDir, `${name}.json`);

  function list(): ImageRecord[] {
    const out: ImageRecord[] = [];
    for (const f of readdirSync(imagesDir).sort()) {
      if (f.startsWith('.') || !f.endsWith('.json')) continue;
      try {
        out.push(JSON.parse(readFileSync(join(imagesDir, f), 'utf8')) as ImageRecord);
      } catch (e) {
        log(`images: skipping unreadable metadata ${f}: ${(e as Error).message}`);
      }
    }
    return out;
  }

  function get(name: string): ImageRecord | undefined {
    if (!NAME_RE.test(name)) return undefined;
    try {
      return JSON.parse(readFileSync(metaPath(name), 'utf8')) as ImageRecord;
    } catch {
      return undefined;
    }
  }

  function requireImage(name: string): ImageRecord {
    const rec = get(name);
    if (!rec) throw errors.imageNotFound(name);
    return rec;
  }

  function writeRecord(rec: ImageRecord): void {
    // Synchronous temp + rename: atomic on disk, and no other store call can interleave between the
    // caller's "does this name exist?" check and this write.
    const tmp = join(imagesDir, `.${rec.name}.${randomBytes(4).toString('hex')}.tmp`);
    writeFileSync(tmp, `${JSON.stringify(rec, null, 2)}\n`, { mode: 0o644, flush: true });
    renameSync(tmp, metaPath(rec.name));
  }

  function layersInUse(): Set<string> {
    return new Set(list().flatMap((r) => r.layers));
  }

  /** Remove build directories that processes which died mid-build left in tmp/. */
  function cleanStale(): Promise<void> {
    staleCleaned ??= (async () => {
      for (const n of await readdir(tmpDir)) {
        if (!n.startsWith(TMP_PREFIX) || ownerAlive(n)) continue;
        log(`images: removing stale build directory ${n}`);
        await removeTree(join(tmpDir, n));
      }
    })();
    return staleCleaned;
  }

  function conflict(name: string, existing: ImageRecord): ForkboxError {
    return new ForkboxError(
      'already_exists',
      `image '${name}' already exists with different content (from ${existing.source}). Remove it first with 'forkbox images rm ${name}', or pick another name.`,
      { image: name },
    );
  }

  /**
   * Make sure the layer for `key` exists, building it with `fill` in a temp dir and renaming it into place
   * when complete. Concurrent calls for the same key share one build. Resolves with the layer's size.
   */
  function ensureLayer(
    key: string,
    fill: (rootfs: string) => Promise<void>,
    emit: (e: ProgressEvent) => void,
    signal?: AbortSignal,
  ): Promise<{ layer: string; sizeBytes: number }> {
    const running = building.get(key);
    if (running) return running;
    const p = (async () => {
      await cleanStale();
      const layer = join(layersDir, key.slice(0, LAYER_ID_LEN));
      const sibling = list().find((r) => r.id === key);
      if (existsSync(layer)) {
        // Either another image uses it, or a process died between the rename and writing metadata:
        // the rename happens only once a layer is complete, so it is whole either way.
        return { layer, sizeBytes: sibling?.sizeBytes ?? (await treeBytes(layer)) };
      }
      const work = join(tmpDir, tmpName());
      await mkdir(work, { mode: 0o700 });
      try {
        const rootfs = join(work, 'rootfs');
        await fill(rootfs);
        if (signal?.aborted) throw new ForkboxError('conflict', 'image build cancelled.');
        emit({ phase: 'shifting', message: `shifting owners into host ids ${shift.hostStart}+` });
        const shifted = await shiftTree(rootfs, shift);
        emit({
          phase: 'shifting',
          message: `shifted ${shifted.files} files`,
          current: shifted.files,
          total: shifted.files,
        });
        await rename(rootfs, layer);
        return { layer, sizeBytes: shifted.bytes };
      } finally {
        await removeTree(work);
      }
    })();
    building.set(key, p);
    const clear = () => building.delete(key);
    p.then(clear, clear);
    return p;
  }

  /** Build (or reuse) the layer for `key`, then register it as `name`; cached when `name` already has `key`. */
  async function materialize(
    name: string,
    key: string,
    source: string,
    fill: (rootfs: string) => Promise<void>,
    emit: (e: ProgressEvent) => void,
    signal?: AbortSignal,
  ): Promise<ImageRecord> {
    const existing = get(name);
    if (existing?.id === key) {
      emit({ phase: 'done', message: `image '${name}' is up to date (cached)` });
      return existing;
    }
    if (existing) throw conflict(name, existing);
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
    if (now) throw conflict(name, now);
    writeRecord(rec);
    emit({ phase: 'done', message: `image '${name}' ready (${rec.id.slice(0, LAYER_ID_LEN)})` });
    log(`images: registered ${name} (${source}) at ${layer}`);
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
    const mirror = readAptMirror(suite);
    const key = createHash('sha256')
      .update(
        JSON.stringify({ kind: 'debootstrap', suite, variant: VARIANT, packages, mirror, shift: shiftSalt }),
      )
      .digest('hex');
    const name = o.name ?? (isDefault ? 'debian' : `debian-${key.slice(0, 8)}`);
    validateImageName(name);
    const emit = o.onProgress ?? (() => {});
    const cached = get(name);
    if (cached?.id !== key && !existsSync(join(layersDir, key.slice(0, LAYER_ID_LEN)))) {
      requireTools(['debootstrap', 'getfattr', 'setfattr']);
    }
    return materialize(
      name,
      key,
      `debootstrap:${suite}`,
      (rootfs) =>
        debootstrap({
          suite,
          packages,
          mirror,
          target: rootfs,
          onProgress: emit,
          log,
          ...(o.signal ? { signal: o.signal } : {}),
        }),
      emit,
      o.signal,
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
    if (get(name)?.id !== key) requireTools(['getfattr', 'setfattr', kind === 'tar' ? 'tar' : 'cp']);
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

  function remove(name: string): void {
    const rec = requireImage(name);
    unlinkSync(metaPath(name));
    const inUse = layersInUse();
    for (const layer of rec.layers) {
      // Only ever delete inside our own layers directory, whatever the metadata file says.
      if (inUse.has(layer) || !resolve(layer).startsWith(layersDir + sep)) continue;
      if (mountsUnder(layer).length > 0) {
        log(`images: keeping layer ${layer}: something is mounted inside it`);
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
    log(`images: removed ${name}`);
  }

  return { list, get, require: requireImage, buildDebian, importImage, remove };
}
