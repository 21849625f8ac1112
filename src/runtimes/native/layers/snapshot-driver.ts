/**
 * Storage drivers: how a sandbox's writable upper directory is frozen into a read-only layer that
 * forked children stack on (docs/STORAGE.md).
 *
 * - `copy` (any filesystem): `cp -a --reflink=auto`. Correct everywhere; cost grows with the upper's size
 *   (free on filesystems with reflinks, e.g. XFS and btrfs).
 * - `btrfs` (btrfs-driver.ts): every sandbox dir is a subvolume, freezing is an O(1) read-only snapshot.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statfsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { runOk } from '../../../util/subprocess.ts';
import type { DiskRoom } from '../host/admission.ts';
import { openNoFollowTree } from '../host/idmap.ts';
import type { DiskQuota, Ext4Disks } from './ext4-disks.ts';

export type { DiskQuota } from './ext4-disks.ts';

/** A sandbox's overlay upper and work dirs (always in one filesystem: overlay renames between them). */
export interface SandboxDirs {
  upper: string;
  work: string;
}

/** How a driver bounds a sandbox's disk, or why it cannot. */
export type DiskLimitSupport =
  | {
      enforced: true;
      /** 'exact': the inode count is a limit of its own; 'bytes': inodes are bounded through the bytes. */
      inodes: 'exact' | 'bytes';
      how: string;
    }
  | { enforced: false; why: string };

export interface SnapshotDriver {
  readonly name: string;
  /**
   * Whether `freeze` takes the upper in one step (a btrfs snapshot) rather than walking it (a copy): a
   * walk must not run while anything of the sandbox can write the upper, so the whole sandbox is frozen
   * for it (fork-sandbox.ts).
   */
  readonly atomicFreeze: boolean;
  readonly diskLimits: DiskLimitSupport;
  /**
   * Create a sandbox's dir `dir` holding an empty `upper` (0755) and `work` (0700), bounded by `quota`
   * (bytes and inodes; 0 = not bounded) when the driver enforces disk limits.
   */
  createSandboxDir(dir: string, quota?: DiskQuota): Promise<SandboxDirs>;
  /**
   * A sandbox dir made before and kept (its processes ended with a reboot or a container restart), made
   * reachable again (its disk remounted); null when its upper is gone. Its limit is the one it was made with.
   */
  openSandboxDir(dir: string): Promise<SandboxDirs | null>;
  /** What a sandbox's dir stores against its limit; null when the driver does not track it. */
  usage(dir: string): { bytes: number; inodes: number | null } | null;
  /** What new sandboxes' disk limits are admitted against (host/admission.ts). */
  free(): DiskRoom;
  /**
   * Bytes this driver's loop images (sparse files on the state dir's filesystem) may still take from it:
   * admission keeps them free, since a host that runs out under a loop image fails its writes with I/O
   * errors. 0 where sandboxes write to the host's filesystem directly.
   */
  hostPromised(): number;
  /** Remove a sandbox's dir and everything in it; a missing dir is not an error. */
  removeSandboxDir(dir: string): Promise<void>;
  /**
   * Optional: make the coming `freeze` of `upperDir` cheap; call it *before* pausing the source. btrfs:
   * syncfs, so the snapshot does not write back dirty data inside the pause (300 MB: ~350 ms → ~4 ms).
   */
  prepareFreeze?(upperDir: string): Promise<void>;
  /** Freeze `upperDir` into a new read-only layer; returns the layer's absolute path. */
  freeze(upperDir: string): Promise<string>;
  remove(layer: string): Promise<void>;
  /** Every layer this driver made. */
  list(): Promise<string[]>;
  /**
   * Remove the half-made layers (`<layers>/s-<id>.tmp`) no freeze of this process is making: what a
   * crash mid-snapshot or mid-fork left (start and `gc`). Returns the paths removed.
   */
  sweepTemps(): Promise<string[]>;
  /**
   * Release what the driver holds on the host (mounts, loop devices). `inUse`: sandboxes outlive this
   * process (a daemon restart), so their storage must stay reachable.
   */
  close(opts: { inUse: boolean }): Promise<void>;
}

/** Plain directories: what the copy driver uses, and the btrfs driver for dirs it did not make. */
export function createPlainDirs(dir: string): SandboxDirs {
  const upper = join(dir, 'upper');
  const work = join(dir, 'work');
  mkdirSync(upper, { recursive: true, mode: 0o755 });
  mkdirSync(work, { recursive: true, mode: 0o700 });
  return { upper, work };
}

/** A kept sandbox dir's upper and work, or null when its upper is gone (work is made again if missing). */
export function keptDirs(dir: string): SandboxDirs | null {
  if (!existsSync(join(dir, 'upper'))) return null;
  return createPlainDirs(dir);
}

/** Snapshot layers live beside image layers, with a prefix image ids never have. */
export const SNAPSHOT_PREFIX = 's-';

/** The half-made layers of `layersDir` that are not in `making` (this process's freezes in flight). */
export function staleLayerTemps(layersDir: string, making: ReadonlySet<string>): string[] {
  let names: string[];
  try {
    names = readdirSync(layersDir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.startsWith(SNAPSHOT_PREFIX) && n.endsWith('.tmp'))
    .map((n) => join(layersDir, n))
    .filter((p) => !making.has(p));
}

/** Free bytes for an unprivileged writer on the filesystem holding `path`. */
export function freeBytes(path: string): number {
  const s = statfsSync(path);
  return s.bavail * s.bsize;
}

/**
 * The copy driver. With `disks` (per-sandbox ext4 volumes, ext4-disks.ts), a sandbox with a disk limit
 * gets its own filesystem of that size; without, sandbox dirs are plain directories and limits are refused.
 */
export function createCopyDriver(
  layersDir: string,
  disks: Ext4Disks | { missing: string } = { missing: 'no disk volumes configured' },
): SnapshotDriver {
  const vols = 'missing' in disks ? null : disks;
  /** Half-made layers of freezes in flight (sweepTemps leaves them). */
  const making = new Set<string>();
  return {
    name: 'copy',
    atomicFreeze: false,
    diskLimits: vols
      ? {
          enforced: true,
          inodes: 'exact',
          how: 'a sparse ext4 image per sandbox, of the limit in size and inodes',
        }
      : { enforced: false, why: 'missing' in disks ? disks.missing : '' },
    async createSandboxDir(dir, quota) {
      if (vols && quota && quota.bytes > 0) {
        mkdirSync(dir, { recursive: true, mode: 0o711 });
        await vols.make(dir, quota);
        try {
          return createPlainDirs(dir);
        } catch (e) {
          vols.remove(dir);
          throw e;
        }
      }
      return createPlainDirs(dir);
    },
    async openSandboxDir(dir) {
      if (vols?.has(dir)) vols.reopen(dir);
      return keptDirs(dir);
    },
    usage(dir) {
      return vols?.has(dir) ? vols.usage(dir) : null;
    },
    free() {
      return vols
        ? {
            // With an overcommit ratio r, the host's free space counts r times over against the promises.
            bytes: Math.max(0, vols.free() * vols.overcommit - vols.promised()),
            where: 'the filesystem holding the disk images',
            reserved: true,
          }
        : { bytes: freeBytes(dirname(layersDir)), where: 'the state dir', reserved: false };
    },
    hostPromised: () => (vols ? vols.promised() / vols.overcommit : 0),
    async removeSandboxDir(dir) {
      vols?.remove(dir);
      rmSync(dir, { recursive: true, force: true });
    },
    async close() {},
    async freeze(upperDir) {
      const id = `${SNAPSHOT_PREFIX}${randomBytes(5).toString('hex')}`;
      const layer = join(layersDir, id);
      const tmp = `${layer}.tmp`;
      // The walk reads a clone of the upper on which no symlink is followed: a directory a sandbox swaps for
      // a link to a host path (renameat2 RENAME_EXCHANGE) fails the copy instead of copying host files in.
      const src = openNoFollowTree(upperDir);
      making.add(tmp);
      try {
        // -a keeps owners, modes, xattrs (overlay's opaque markers) and whiteout device nodes.
        await runOk('cp', ['-a', '--reflink=auto', `/proc/${process.pid}/fd/${src.fd}/.`, tmp]);
        renameSync(tmp, layer);
      } catch (e) {
        rmSync(tmp, { recursive: true, force: true });
        throw e;
      } finally {
        src.close();
        making.delete(tmp);
      }
      return layer;
    },
    async sweepTemps() {
      const stale = staleLayerTemps(layersDir, making);
      for (const p of stale) rmSync(p, { recursive: true, force: true });
      return stale;
    },
    async remove(layer) {
      rmSync(layer, { recursive: true, force: true });
    },
    async list() {
      try {
        return readdirSync(layersDir)
          .filter((n) => n.startsWith(SNAPSHOT_PREFIX) && !n.endsWith('.tmp'))
          .map((n) => join(layersDir, n));
      } catch {
        return [];
      }
    },
  };
}
