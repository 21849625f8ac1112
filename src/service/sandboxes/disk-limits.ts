/**
 * Disk limits: the daemon's policy (a default and a maximum, in bytes and inodes) and the check of one
 * request against it. A sandbox's disk limit bounds what it stores of its own writes; how it is enforced
 * depends on the storage driver (docs/STORAGE.md).
 */
import { errors, ForkboxError } from '../../domain/errors.ts';
import { MiB } from '../../domain/sizes.ts';
import { DEFAULT_LIMITS } from '../../domain/types.ts';

/** Smallest disk limit: an upper needs room for its overlay metadata, and a copy-driver volume its own. */
export const MIN_DISK_MB = 16;
export const MIN_DISK_INODES = 1000;

export interface DiskPolicy {
  /** False when the storage cannot enforce disk limits: sandboxes get none, and asking for one is refused. */
  enforced: boolean;
  defaultBytes: number;
  defaultInodes: number;
  maxBytes: number;
  maxInodes: number;
}

export const DEFAULT_DISK_POLICY: DiskPolicy = {
  enforced: true,
  defaultBytes: DEFAULT_LIMITS.diskBytes,
  defaultInodes: DEFAULT_LIMITS.diskInodes,
  maxBytes: 1024 ** 4,
  maxInodes: 100_000_000,
};

/** The policy from daemon settings (FORKBOX_DISK_DEFAULT / FORKBOX_DISK_MAX, already parsed). */
export function diskPolicy(opts: {
  enforced: boolean;
  defaults?: { bytes: number; inodes?: number } | undefined;
  max?: { bytes: number; inodes?: number } | undefined;
}): DiskPolicy {
  const maxBytes = opts.max?.bytes ?? DEFAULT_DISK_POLICY.maxBytes;
  const maxInodes = opts.max?.inodes ?? DEFAULT_DISK_POLICY.maxInodes;
  // A maximum below the built-in default lowers the default with it; an explicit default must fit.
  const p: DiskPolicy = {
    enforced: opts.enforced,
    defaultBytes: opts.defaults?.bytes ?? Math.min(DEFAULT_DISK_POLICY.defaultBytes, maxBytes),
    defaultInodes: opts.defaults?.inodes ?? Math.min(DEFAULT_DISK_POLICY.defaultInodes, maxInodes),
    maxBytes,
    maxInodes,
  };
  if (p.maxBytes < MIN_DISK_MB * MiB || p.maxInodes < MIN_DISK_INODES) {
    throw new ForkboxError(
      'invalid_argument',
      `the disk maximum (FORKBOX_DISK_MAX / --disk-max) must be at least ${MIN_DISK_MB}m,${MIN_DISK_INODES}.`,
    );
  }
  if (p.defaultBytes > p.maxBytes || p.defaultInodes > p.maxInodes) {
    throw new ForkboxError(
      'invalid_argument',
      `the default disk limit (${p.defaultBytes} bytes, ${p.defaultInodes} inodes) is over the maximum (${p.maxBytes} bytes, ${p.maxInodes} inodes): lower FORKBOX_DISK_DEFAULT or raise FORKBOX_DISK_MAX.`,
    );
  }
  return p;
}

function inRange(name: string, v: number, min: number, max: number, unit: string): number {
  if (!Number.isInteger(v) || v < min || v > max) {
    throw errors.invalid(
      `${name} must be a whole number from ${min} to ${max}${unit} (got ${v}); the maximum is the daemon's FORKBOX_DISK_MAX.`,
      { [name]: v, min, max },
    );
  }
  return v;
}

/** The disk part of a sandbox's limits: what was asked (checked against the policy), else the default. */
export function diskLimitsFrom(
  req: { diskMb?: number | undefined; diskInodes?: number | undefined },
  policy: DiskPolicy = DEFAULT_DISK_POLICY,
): { diskBytes: number; diskInodes: number } {
  if (!policy.enforced) {
    if (req.diskMb !== undefined || req.diskInodes !== undefined) {
      throw new ForkboxError(
        'requirement_missing',
        "this daemon's storage cannot enforce disk limits (see 'forkbox doctor': the copy driver needs loop devices and mkfs.ext4); create the sandbox without a disk limit.",
      );
    }
    return { diskBytes: 0, diskInodes: 0 };
  }
  const maxMb = Math.floor(policy.maxBytes / MiB);
  return {
    diskBytes:
      req.diskMb === undefined
        ? policy.defaultBytes
        : inRange('disk_mb', req.diskMb, MIN_DISK_MB, maxMb, ' MiB') * MiB,
    diskInodes:
      req.diskInodes === undefined
        ? policy.defaultInodes
        : inRange('disk_inodes', req.diskInodes, MIN_DISK_INODES, policy.maxInodes, ''),
  };
}
