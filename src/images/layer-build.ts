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
  /** Sweep what dead processes left in tmp/; call before making a temp dir of one's own. */
  cleanStale(): Promise<void>;
  /** The directory the layer of `key` lives in (whether or not it exists yet). */
  pathOf(key: string): string;
};

export function createLayerBuilder(opts: LayerBuildOptions): EnsureLayer {
  const { layersDir, tmpDir, shift, log } = opts;
  const list = () => opts.records.list();
  const building = new Map<string, Promise<{ layer: string; sizeBytes: number }>>();
  let staleCleaned: Promise<void> | undefined;

  /** Remove build directories that processes which died mid-build left in tmp/. */
  function cleanStale(): Promise<void> {
    staleCleaned ??= (async () => {
      for (const n of await readdir(tmpDir)) {
        if (!n.startsWith(TMP_PREFIX) || ownerAlive(n)) continue;
        log.info({ dir: n }, 'images: removing a stale build directory');
        await removeTree(join(tmpDir, n));
      }
    })();
    return staleCleaned;
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
          message: `shifted ${shifted.files} files${shifted.devices > 0 ? `, dropped ${shifted.devices} device nodes` : ''}`,
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

  return Object.assign(ensureLayer, {
    cleanStale,
    pathOf: (key: string) => join(layersDir, key.slice(0, LAYER_ID_LEN)),
  });
}
