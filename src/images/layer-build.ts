/**
 * Building image layers: a layer is filled in a private temp dir under `<stateDir>/tmp/`, uid-shifted,
 * then renamed into `<stateDir>/layers/<id>/` only when complete, so a crash never leaves half a layer.
 * Concurrent builds of one content key share one build; build dirs a dead process left are swept.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { ForkboxError } from '../domain/errors.ts';
import type { Logger } from '../domain/logger.ts';
import type { ProgressEvent } from '../service/api.ts';
import { removeTree, treeBytes } from './fsutil.ts';
import type { ImageRecords } from './image-records.ts';
import { shiftTree, type UidShift } from './shift.ts';

/** Layer ids stay short: overlay's lowerdir option list must fit in one page. */
export const LAYER_ID_LEN = 12;
const TMP_PREFIX = 'img-';

/** Build directories carry their process id, so a cleanup never touches another live process's build. */
export function tmpName(): string {
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

export interface LayerBuildOptions {
  layersDir: string;
  tmpDir: string;
  shift: UidShift;
  records: Pick<ImageRecords, 'list'>;
  log: Pick<Logger, 'info'>;
}

export type EnsureLayer = ((
  key: string,
  fill: (rootfs: string) => Promise<void>,
  emit: (e: ProgressEvent) => void,
  signal?: AbortSignal,
) => Promise<{ layer: string; sizeBytes: number }>) & {
  /** Sweep what dead processes left in tmp/ (once: the first build or pull of this process waits for it). */
  cleanStale(): Promise<void>;
  /**
   * Remove every entry of tmp/ that no build or pull in flight uses (this process's, or a live other
   * process's): what a crash left, at start and at `gc`. Returns the paths removed.
   */
  sweepTemps(): Promise<string[]>;
  /** A fresh work dir in tmp/ for `fn`, kept from sweepTemps while `fn` runs and removed after. */
  withWorkDir<T>(fn: (work: string) => Promise<T>): Promise<T>;
  /** The directory the layer of `key` lives in (whether or not it exists yet). */
  pathOf(key: string): string;
};

export function createLayerBuilder(opts: LayerBuildOptions): EnsureLayer {
  const { layersDir, tmpDir, shift, log } = opts;
  const list = () => opts.records.list();
  const building = new Map<string, Promise<{ layer: string; sizeBytes: number }>>();
  let staleCleaned: Promise<void> | undefined;

  /** Names of tmp/ entries in use by this process's builds and pulls. */
  const active = new Set<string>();

  async function sweepTemps(): Promise<string[]> {
    const removed: string[] = [];
    for (const n of await readdir(tmpDir).catch(() => [] as string[])) {
      if (active.has(n) || ownerAlive(n)) continue;
      log.info({ dir: n }, 'images: removing what a crashed build, import or pull left');
      await removeTree(join(tmpDir, n));
      removed.push(join(tmpDir, n));
    }
    return removed;
  }
  function cleanStale(): Promise<void> {
    staleCleaned ??= sweepTemps().then(() => undefined);
    return staleCleaned;
  }

  async function withWorkDir<T>(fn: (work: string) => Promise<T>): Promise<T> {
    const name = tmpName();
    const work = join(tmpDir, name);
    active.add(name);
    try {
      await mkdir(work, { mode: 0o700 });
      return await fn(work);
    } finally {
      await removeTree(work);
      active.delete(name);
    }
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
      return withWorkDir(async (work) => {
        const rootfs = join(work, 'rootfs');
        await fill(rootfs);
        if (signal?.aborted) throw new ForkboxError('conflict', 'image build cancelled.');
        emit({ phase: 'shifting', message: `shifting owners into host ids ${shift.hostStart}+` });
        const shifted = await shiftTree(rootfs, shift);
        emit({
          phase: 'shifting',
          message: `shifted ${shifted.files} files${shifted.devices > 0 ? `, dropped ${shifted.devices} device nodes` : ''}`,
          current: shifted.files,
          total: shifted.files,
        });
        await rename(rootfs, layer);
        return { layer, sizeBytes: shifted.bytes };
      });
    })();
    building.set(key, p);
    const clear = () => building.delete(key);
    p.then(clear, clear);
    return p;
  }

  return Object.assign(ensureLayer, {
    cleanStale,
    sweepTemps,
    withWorkDir,
    pathOf: (key: string) => join(layersDir, key.slice(0, LAYER_ID_LEN)),
  });
}
