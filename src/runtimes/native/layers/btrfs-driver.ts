/**
 * The btrfs storage driver (docs/STORAGE.md): every sandbox dir is a subvolume holding its overlay `upper`
 * and `work` (overlay renames between the two, and a rename across subvolumes fails with EXDEV), and
 * freezing an upper is a read-only snapshot of that subvolume: O(1) in the upper's size. A layer is
 * `<layers>/s-<id>/upper`. Disk limits are btrfs simple quotas on each sandbox subvolume
 * (btrfs-qgroups.ts): full qgroups would make snapshots and deletes slower.
 *
 * A btrfs snapshot writes out the source's dirty data itself (btrfs starts and waits for delalloc of the
 * subvolume before taking it), so the layer holds every write made before the freeze without a syncfs.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import { runOk } from '../../../util/subprocess.ts';
import { type BtrfsIoctl, createBtrfsIoctl, isSubvolume } from './btrfs-ioctl.ts';
import type { BtrfsQuotas } from './btrfs-qgroups.ts';
import type { BtrfsVolume } from './btrfs-volume.ts';
import {
  createPlainDirs,
  freeBytes,
  keptDirs,
  SNAPSHOT_PREFIX,
  type SnapshotDriver,
  staleLayerTemps,
} from './snapshot-driver.ts';

const GiB = 1024 ** 3;

export function createBtrfsDriver(
  volume: BtrfsVolume,
  ioctl: BtrfsIoctl = createBtrfsIoctl(),
  quotas: BtrfsQuotas | { missing: string } = { missing: 'quotas were not opened' },
): SnapshotDriver {
  const { layersDir } = volume;
  const q = 'missing' in quotas ? null : quotas;
  /** Half-made layers of freezes in flight (sweepTemps leaves them). */
  const making = new Set<string>();

  /** ENOSPC becomes an error that says which setting to change. */
  function full(e: unknown, doing: string): unknown {
    const code = (e as { code?: string }).code;
    const text = e instanceof Error ? e.message : String(e);
    if (code !== 'ENOSPC' && !/No space left on device/.test(text)) return e;
    const fix = volume.loop
      ? `its image ${volume.loop.image} is ${(volume.loop.sizeBytes / GiB).toFixed(0)} GiB: set FORKBOX_BTRFS_SIZE to a larger size (e.g. ${Math.ceil((volume.loop.sizeBytes * 2) / GiB)}G) and restart forkbox (the image grows in place), or kill sandboxes you no longer need and run 'forkbox gc'`
      : `free space on the filesystem holding the state dir, or kill sandboxes you no longer need and run 'forkbox gc'`;
    return new ForkboxError('resource_exhausted', `the btrfs storage is full while ${doing}; ${fix}.`, {
      storage: 'btrfs',
    });
  }

  function wrap<T>(doing: string, fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      throw full(e, doing);
    }
  }

  /** Delete a subvolume, or a plain tree (a dir made before the driver was switched). */
  function removeTree(path: string): void {
    if (!existsSync(path)) return;
    if (isSubvolume(path)) {
      try {
        ioctl.deleteSubvolume(path);
        return;
      } catch {
        // e.g. a nested subvolume inside: rmdir removes empty subvolumes too (root, kernel >= 4.18).
      }
    }
    rmSync(path, { recursive: true, force: true });
  }

  return {
    name: 'btrfs',
    atomicFreeze: true,
    diskLimits: q
      ? {
          enforced: true,
          inodes: 'bytes',
          how: `btrfs ${q.mode === 'squota' ? 'simple quotas' : 'qgroups'}: a limit on each sandbox's subvolume, counting its data and its metadata`,
        }
      : { enforced: false, why: 'missing' in quotas ? quotas.missing : '' },

    async createSandboxDir(dir, quota) {
      mkdirSync(dirname(dir), { recursive: true, mode: 0o711 });
      wrap(`creating the subvolume for ${basename(dir)}`, () => ioctl.createSubvolume(dir));
      try {
        if (q && quota && quota.bytes > 0) q.limit(dir, quota.bytes);
        return createPlainDirs(dir);
      } catch (e) {
        removeTree(dir);
        throw full(e, `creating ${dir}`);
      }
    },

    async openSandboxDir(dir) {
      // A subvolume (and its quota) outlives a reboot: nothing to remount.
      return keptDirs(dir);
    },

    async removeSandboxDir(dir) {
      removeTree(dir);
    },

    usage(dir) {
      if (!q || !isSubvolume(dir)) return null;
      return { bytes: q.usage(dir), inodes: null };
    },

    free() {
      // A loopback image is sparse: its free space is only usable while the host has it too.
      // Quotas share the filesystem (reserved: false): past its free space every writer gets ENOSPC.
      const inVolume = freeBytes(volume.sandboxesDir);
      if (!volume.loop) {
        return { bytes: inVolume, where: `the btrfs filesystem of ${volume.sandboxesDir}`, reserved: false };
      }
      return {
        bytes: Math.min(inVolume, freeBytes(dirname(volume.loop.image))),
        where: `the btrfs image ${volume.loop.image} (${(volume.loop.sizeBytes / GiB).toFixed(0)} GiB, sparse) and the host filesystem holding it`,
        reserved: false,
      };
    },

    hostPromised() {
      // The image may grow to its size: the host must have that, or btrfs sees I/O errors and stops.
      if (!volume.loop) return 0;
      try {
        const st = statSync(volume.loop.image);
        return Math.max(0, st.size - st.blocks * 512);
      } catch {
        return 0;
      }
    },

    async prepareFreeze(upperDir) {
      ioctl.syncfs(dirname(upperDir));
    },

    async freeze(upperDir) {
      const id = `${SNAPSHOT_PREFIX}${randomBytes(5).toString('hex')}`;
      const layer = join(layersDir, id);
      const sandboxDir = dirname(upperDir);
      if (isSubvolume(sandboxDir)) {
        wrap('snapshotting a sandbox', () => ioctl.snapshot(sandboxDir, layer, true));
        return join(layer, basename(upperDir));
      }
      // An upper this driver did not make (e.g. before a switch from the copy driver): copy it into a
      // subvolume, with reflinks where the source is on the same btrfs.
      const tmp = `${layer}.tmp`;
      making.add(tmp);
      try {
        wrap('making a layer', () => ioctl.createSubvolume(tmp));
        await runOk('cp', ['-a', '--reflink=auto', upperDir, join(tmp, 'upper')]);
        renameSync(tmp, layer);
      } catch (e) {
        removeTree(tmp);
        throw full(e, 'copying a sandbox into a layer');
      } finally {
        making.delete(tmp);
      }
      return join(layer, 'upper');
    },

    async sweepTemps() {
      const stale = staleLayerTemps(layersDir, making);
      for (const p of stale) removeTree(p);
      return stale;
    },

    async remove(layer) {
      // A btrfs layer is `<layers>/s-<id>/upper`; anything else is a plain (copy-made) layer dir.
      const parent = dirname(layer);
      if (basename(layer) === 'upper' && basename(parent).startsWith(SNAPSHOT_PREFIX) && isSubvolume(parent))
        removeTree(parent);
      else rmSync(layer, { recursive: true, force: true });
    },

    async list() {
      let names: string[] = [];
      try {
        names = readdirSync(layersDir);
      } catch {
        return [];
      }
      return names
        .filter((n) => n.startsWith(SNAPSHOT_PREFIX) && !n.endsWith('.tmp'))
        .map((n) => join(layersDir, n))
        .map((p) => (isSubvolume(p) ? join(p, 'upper') : p));
    },

    async close({ inUse }) {
      if (!inUse) volume.detach();
    },
  };
}
