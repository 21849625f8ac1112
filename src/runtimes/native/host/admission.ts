/**
 * Host-wide admission control (DESIGN 2.6): refuse a create or fork that would commit more memory than
 * host memory × overcommit ratio, or that would start while the state directory's filesystem is nearly
 * full. Refusing early with a clear message beats the alternative: the host OOM killer or ENOSPC halfway
 * through a fork.
 */
import fsp from 'node:fs/promises';
import { ForkboxError } from '../../../domain/errors.ts';

export const DEFAULT_OVERCOMMIT_RATIO = 2;

export interface AdmissionOptions {
  hostMemoryBytes: number;
  /** Sum of sandbox memory limits may reach hostMemoryBytes × this. Default 2. */
  overcommitRatio?: number;
  minFreeDiskBytes: number;
  /** Directory whose filesystem holds sandbox uppers and layers. */
  stateDir: string;
  /** For tests: returns free bytes available to the daemon on the filesystem of `dir`. */
  freeDiskBytes?: (dir: string) => Promise<number>;
}

export interface Admission {
  readonly memoryCapacityBytes: number;
  /** Throws `resource_exhausted` if admitting `requestMemoryBytes` more is not possible. */
  checkMemory(requestMemoryBytes: number, committedMemoryBytes: number): void;
  /** Throws `resource_exhausted` if the state directory's filesystem has less than the minimum free. */
  checkDisk(): Promise<void>;
  /**
   * Throws `resource_exhausted` when one sandbox's disk limit is more than its storage has free: it could
   * not get what it was promised. Limits are not reserved (thin provisioning): a full storage still fails
   * writes with its own error.
   */
  checkDiskLimit(limitBytes: number, free: { bytes: number; where: string }): void;
  /** Both checks: memory first (cheap), then disk. */
  check(requestMemoryBytes: number, committedMemoryBytes: number): Promise<void>;
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : Number(v.toFixed(1))} ${units[i]}`;
}

async function statfsFree(dir: string): Promise<number> {
  const s = await fsp.statfs(dir);
  // bavail, not bfree: blocks reserved for root do not help a daemon that should not eat into them.
  return s.bavail * s.bsize;
}

export function createAdmission(opts: AdmissionOptions): Admission {
  const ratio = opts.overcommitRatio ?? DEFAULT_OVERCOMMIT_RATIO;
  if (!Number.isFinite(ratio) || ratio <= 0) {
    throw new ForkboxError(
      'invalid_argument',
      `invalid overcommit ratio ${ratio}: use a positive number such as 1 (no overcommit) or 2 (FORKBOX_OVERCOMMIT_RATIO)`,
      { overcommitRatio: ratio },
    );
  }
  if (!Number.isFinite(opts.hostMemoryBytes) || opts.hostMemoryBytes <= 0) {
    throw new ForkboxError('invalid_argument', `invalid host memory size ${opts.hostMemoryBytes}`, {
      hostMemoryBytes: opts.hostMemoryBytes,
    });
  }
  const capacity = Math.floor(opts.hostMemoryBytes * ratio);
  const freeDisk = opts.freeDiskBytes ?? statfsFree;

  function checkMemory(request: number, committed: number): void {
    if (committed + request <= capacity) return;
    const left = Math.max(0, capacity - committed);
    throw new ForkboxError(
      'resource_exhausted',
      `not enough host memory: this sandbox needs ${formatBytes(request)} but only ${formatBytes(left)} is left (sandboxes already have ${formatBytes(committed)} of the ${formatBytes(capacity)} limit = host memory ${formatBytes(opts.hostMemoryBytes)} × overcommit ratio ${ratio}). Kill sandboxes you no longer need ('forkbox ls', 'forkbox kill <id>'), ask for less with --memory, or raise FORKBOX_OVERCOMMIT_RATIO.`,
      {
        limit: 'memory',
        requestedBytes: request,
        committedBytes: committed,
        capacityBytes: capacity,
        hostMemoryBytes: opts.hostMemoryBytes,
        overcommitRatio: ratio,
      },
    );
  }

  async function checkDisk(): Promise<void> {
    let free: number;
    try {
      free = await freeDisk(opts.stateDir);
    } catch (e) {
      throw new ForkboxError(
        'unavailable',
        `cannot check free disk space of the state directory ${opts.stateDir}: ${(e as Error).message}. Check that it exists and is readable.`,
        { stateDir: opts.stateDir },
        { cause: e },
      );
    }
    if (free >= opts.minFreeDiskBytes) return;
    throw new ForkboxError(
      'resource_exhausted',
      `not enough free disk: only ${formatBytes(free)} free on the filesystem holding ${opts.stateDir}, and forkbox keeps at least ${formatBytes(opts.minFreeDiskBytes)} free. Kill sandboxes and delete snapshots or images you no longer need, or free space on that filesystem.`,
      { limit: 'disk', freeBytes: free, minFreeBytes: opts.minFreeDiskBytes, stateDir: opts.stateDir },
    );
  }

  function checkDiskLimit(limit: number, free: { bytes: number; where: string }): void {
    if (limit <= 0 || limit <= free.bytes) return;
    throw new ForkboxError(
      'resource_exhausted',
      `not enough disk for this sandbox's disk limit: it asks for ${formatBytes(limit)} but only ${formatBytes(free.bytes)} is free on ${free.where}. Ask for less (--disk, disk_mb), kill sandboxes and delete snapshots you no longer need, or free space there.`,
      { limit: 'disk', requestedBytes: limit, freeBytes: free.bytes, where: free.where },
    );
  }

  return {
    memoryCapacityBytes: capacity,
    checkMemory,
    checkDisk,
    checkDiskLimit,
    async check(request, committed) {
      checkMemory(request, committed);
      await checkDisk();
    },
  };
}
