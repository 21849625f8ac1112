/**
 * Choosing the storage driver: FORKBOX_STORAGE=btrfs|copy|auto (default auto). Auto takes btrfs when
 * the state dir is on btrfs, or when a loopback btrfs can be made here (btrfs in the kernel, mkfs.btrfs
 * and losetup installed, loop devices available); otherwise copy. The reason is always reported.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import type { Logger } from '../../../domain/logger.ts';
import { which } from '../../../util/subprocess.ts';
import { type Mounts, readMountInfo } from '../host/mounts.ts';
import type { Sys } from '../host/sys.ts';
import { createBtrfsDriver } from './btrfs-driver.ts';
import { isOnBtrfs } from './btrfs-ioctl.ts';
import { type BtrfsQuotas, openBtrfsQuotas } from './btrfs-qgroups.ts';
import { openBtrfsVolume } from './btrfs-volume.ts';
import { createExt4Disks, ext4DisksMissing } from './ext4-disks.ts';
import { createCopyDriver, type SnapshotDriver } from './snapshot-driver.ts';

export type StorageMode = 'auto' | 'btrfs' | 'copy';

export interface StoragePlan {
  mode: StorageMode;
  driver: 'btrfs' | 'copy';
  /** Loopback image (true) or the state dir's own btrfs (false); only for btrfs. */
  loopback: boolean;
  /** False only when FORKBOX_STORAGE=btrfs asks for what this host cannot do. */
  available: boolean;
  reason: string;
}

type Env = Record<string, string | undefined>;

export function storageMode(env: Env = process.env): StorageMode {
  const v = (env.FORKBOX_STORAGE ?? 'auto').trim().toLowerCase() || 'auto';
  if (v === 'auto' || v === 'btrfs' || v === 'copy') return v;
  throw new ForkboxError(
    'invalid_argument',
    `FORKBOX_STORAGE=${JSON.stringify(env.FORKBOX_STORAGE)} is not a storage driver; use btrfs, copy or auto.`,
  );
}

const onPath = (bin: string): boolean => which(bin) !== null;

function kernelHasBtrfs(): boolean {
  const has = () => /\tbtrfs$/m.test(readFileSync('/proc/filesystems', 'utf8'));
  if (has()) return true;
  // A module not loaded yet: mount(2) would also load it on demand, but say so up front.
  if (onPath('modprobe')) spawnSync('modprobe', ['btrfs'], { stdio: 'ignore' });
  return has();
}

/** What a loopback btrfs would lack here, or null when it can be made. */
export function loopbackMissing(): string | null {
  if (!kernelHasBtrfs()) return 'the kernel has no btrfs (not in /proc/filesystems, modprobe btrfs failed)';
  if (!onPath('mkfs.btrfs')) return 'mkfs.btrfs is not installed (apt-get install btrfs-progs)';
  if (!onPath('losetup')) return 'losetup is not installed (apt-get install mount)';
  if (!existsSync('/dev/loop-control')) return 'no loop devices (/dev/loop-control is missing)';
  return null;
}

/** Sandboxes made by the copy driver block the loopback volume (it is bound over their directory). */
function copySandboxesIn(stateDir: string): string | null {
  const dir = join(stateDir, 'sandboxes');
  if (readMountInfo().some((m) => m.mountPoint === dir)) return null;
  try {
    const n = readdirSync(dir).length;
    return n > 0 ? `${dir} holds ${n} sandbox dir(s) made with the copy driver (kill them first)` : null;
  } catch {
    return null;
  }
}

/** Which driver `openStorage` would pick, without touching anything (for `forkbox doctor`). */
export function planStorage(stateDir: string, env: Env = process.env): StoragePlan {
  const mode = storageMode(env);
  if (mode === 'copy')
    return { mode, driver: 'copy', loopback: false, available: true, reason: 'FORKBOX_STORAGE=copy' };
  if (isOnBtrfs(stateDir))
    return {
      mode,
      driver: 'btrfs',
      loopback: false,
      available: true,
      reason: `the state dir ${stateDir} is on btrfs`,
    };
  const missing = loopbackMissing() ?? copySandboxesIn(stateDir);
  if (missing === null) {
    return {
      mode,
      driver: 'btrfs',
      loopback: true,
      available: true,
      reason: `a loopback btrfs image at ${join(stateDir, 'btrfs.img')} (the state dir is not on btrfs)`,
    };
  }
  if (mode === 'btrfs') return { mode, driver: 'btrfs', loopback: true, available: false, reason: missing };
  return {
    mode,
    driver: 'copy',
    loopback: false,
    available: true,
    reason: `btrfs is not usable here: ${missing}`,
  };
}

export interface OpenedStorage {
  driver: SnapshotDriver;
  reason: string;
}

/** FORKBOX_DISK_OVERCOMMIT: how many times over the host's free space the copy driver's images may be promised. */
export function diskOvercommit(env: Env): number {
  const text = env.FORKBOX_DISK_OVERCOMMIT?.trim() ?? '';
  if (text === '') return 1;
  const n = Number(text);
  if (!Number.isFinite(n) || n < 1) {
    throw new ForkboxError(
      'invalid_argument',
      `FORKBOX_DISK_OVERCOMMIT=${JSON.stringify(env.FORKBOX_DISK_OVERCOMMIT)} is not a ratio of 1 or more; leave it unset (1: every disk limit is backed by free space) or set e.g. 4.`,
    );
  }
  return n;
}

export function openStorage(opts: {
  stateDir: string;
  sys: Sys;
  mounts: Mounts;
  log: Logger;
  env?: Env;
}): OpenedStorage {
  const env = opts.env ?? process.env;
  const plan = planStorage(opts.stateDir, env);
  const copy = () => {
    const missing = env.FORKBOX_DISK_LIMITS === 'off' ? 'FORKBOX_DISK_LIMITS=off' : ext4DisksMissing();
    const driver = createCopyDriver(
      join(opts.stateDir, 'layers'),
      missing
        ? { missing: `disk limits need per-sandbox ext4 volumes, but ${missing}` }
        : createExt4Disks({
            disksDir: join(opts.stateDir, 'disks'),
            sys: opts.sys,
            mounts: opts.mounts,
            overcommit: diskOvercommit(env),
          }),
    );
    if (missing) opts.log.warn({ storage: 'copy', missing }, 'disk limits are not enforced');
    return driver;
  };
  if (plan.driver === 'copy') {
    opts.log.info({ storage: 'copy', reason: plan.reason }, 'storage driver: copy');
    return { driver: copy(), reason: plan.reason };
  }
  if (!plan.available) {
    throw new ForkboxError(
      'requirement_missing',
      `FORKBOX_STORAGE=btrfs but btrfs cannot be used here: ${plan.reason}; fix that, or set FORKBOX_STORAGE=copy (or auto).`,
    );
  }
  try {
    const volume = openBtrfsVolume({ ...opts, sizeText: env.FORKBOX_BTRFS_SIZE });
    let quotas: BtrfsQuotas | { missing: string } = { missing: 'FORKBOX_DISK_LIMITS=off' };
    try {
      if (env.FORKBOX_DISK_LIMITS !== 'off') quotas = openBtrfsQuotas(volume.sandboxesDir);
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      quotas = {
        missing: `btrfs quotas could not be enabled (${why}; simple quotas need Linux 6.7 or later)`,
      };
      opts.log.warn({ storage: 'btrfs', why }, 'disk limits are not enforced');
    }
    opts.log.info({ storage: 'btrfs', reason: plan.reason }, 'storage driver: btrfs');
    return { driver: createBtrfsDriver(volume, undefined, quotas), reason: plan.reason };
  } catch (e) {
    if (plan.mode === 'btrfs') throw e;
    const reason = `btrfs could not be set up (${e instanceof Error ? e.message : String(e)})`;
    opts.log.warn({ storage: 'copy', reason }, 'storage driver: copy (btrfs failed)');
    return { driver: copy(), reason };
  }
}
