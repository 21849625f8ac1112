/**
 * Host-wide admission control: whether a create or fork may start. Sandboxes are admitted by what the
 * host really has, not by the sum of their limits — an idle sandbox uses a few MiB whatever its limit —
 * and limits stay what they are, each sandbox's cap. A create or fork of `n` sandboxes is refused when:
 *
 * - the host is under memory pressure: PSI `full avg10` above `maxPressure` percent;
 * - admitting them would leave less than `minAvailableBytes` of MemAvailable, counting `perSandboxBytes`
 *   for each new one (what a new sandbox's processes take at first);
 * - the sum of live sandboxes' memory limits would pass host memory × `limitOvercommit` (a ceiling on
 *   how far limits may be overcommitted; high by default);
 * - the state dir's filesystem has less than `minFreeDiskBytes` free beyond what the storage's loop images
 *   may still take from it (`promisedBytes`: a host that runs out under a loop image loses its writes);
 * - their disk limits do not fit the storage's room: on storage that reserves limits (the copy driver's
 *   per-sandbox images) all of them together, beside `minFreeDiskBytes`; on storage that shares its space
 *   (btrfs, where a full filesystem fails writes with ENOSPC and loses nothing) each one alone.
 *
 * When memory does run out anyway, the OOM killer's order is set by oom_score_adj (spawn/oom-order.ts):
 * forks before the sandboxes they came from, sandboxes before templates and the daemon.
 */
import fsp from 'node:fs/promises';
import { ForkboxError } from '../../../domain/errors.ts';
import { formatBytes } from '../../../domain/sizes.ts';
import type { AdmissionRefusal } from '../../../service/ports.ts';
import { type MemoryState, readMemoryState } from './memory-state.ts';

/** Default ceiling of the sum of memory limits, in multiples of host memory (FORKBOX_OVERCOMMIT_RATIO). */
export const DEFAULT_OVERCOMMIT_RATIO = 64;
/** Default memory counted for each new sandbox against MemAvailable (FORKBOX_ADMIT_SANDBOX_MB). */
export const DEFAULT_PER_SANDBOX_BYTES = 32 * 1024 * 1024;
/** Default PSI `full avg10` above which creates and forks are refused (FORKBOX_MAX_MEMORY_PRESSURE). */
export const DEFAULT_MAX_PRESSURE = 10;

export interface AdmissionOptions {
  hostMemoryBytes: number;
  /** Sum of sandbox memory limits may reach hostMemoryBytes × this. */
  overcommitRatio?: number;
  perSandboxBytes?: number;
  /** MemAvailable kept free after admitting; default max(512 MiB, 5% of host memory). */
  minAvailableBytes?: number;
  /** Percent; default DEFAULT_MAX_PRESSURE. */
  maxPressure?: number;
  minFreeDiskBytes: number;
  /** Directory whose filesystem holds sandbox uppers and layers. */
  stateDir: string;
  /** For tests: returns free bytes available to the daemon on the filesystem of `dir`. */
  freeDiskBytes?: (dir: string) => Promise<number>;
  /** For tests: the host's memory state (default /proc/meminfo and /proc/pressure/memory). */
  memoryState?: () => MemoryState;
  /** Memory this daemon's sandboxes use together (for messages); default unknown. */
  sandboxesUseBytes?: () => Promise<number | null>;
  onRefused?: (reason: AdmissionRefusal) => void;
}

export interface AdmissionRequest {
  /** New sandboxes. */
  count: number;
  /** Sum of their memory limits. */
  limitBytes: number;
  /** Sum of the memory limits of this daemon's live sandboxes. */
  committedLimitBytes: number;
}

export interface Admission {
  readonly memoryCapacityBytes: number;
  /** Throws `resource_exhausted` if admitting `req` is not possible. */
  checkMemory(req: AdmissionRequest): Promise<void>;
  /**
   * Throws `resource_exhausted` if the state directory's filesystem has less than the minimum free once
   * `promisedBytes` (what loop images may still take from it) are set aside.
   */
  checkDisk(promisedBytes?: number): Promise<void>;
  /**
   * Throws `resource_exhausted` when new sandboxes' disk limits do not fit `room`: together (beside the
   * minimum free) where the room reserves them, each alone where it is shared.
   */
  checkDiskLimits(limitBytes: number[], room: DiskRoom): void;
}

/** What new sandboxes' disk limits are admitted against (a storage driver's `free()`). */
export interface DiskRoom {
  /** Bytes new sandboxes' writes can take (for reserving storage: already less what live ones may write). */
  bytes: number;
  where: string;
  /**
   * True where each limit is set aside for good (loop images on the host: a host that runs out under one
   * loses its writes); false where sandboxes share the space and a full filesystem refuses writes cleanly.
   */
  reserved: boolean;
}

async function statfsFree(dir: string): Promise<number> {
  const s = await fsp.statfs(dir);
  // bavail, not bfree: blocks reserved for root do not help a daemon that should not eat into them.
  return s.bavail * s.bsize;
}

function positive(name: string, v: number, env: string): number {
  if (!Number.isFinite(v) || v <= 0) {
    throw new ForkboxError('invalid_argument', `invalid ${name} ${v}: use a positive number (${env}).`, {
      [name]: v,
    });
  }
  return v;
}

/** What a refused create or fork can do next (surfaces rewrite the CLI commands, e.g. MCP). */
export const ADVICE =
  "Kill sandboxes you no longer need ('forkbox ls', 'forkbox kill <id>') and try again; forks of a small REPL need little";

export function createAdmission(opts: AdmissionOptions): Admission {
  const ratio = positive(
    'overcommit ratio',
    opts.overcommitRatio ?? DEFAULT_OVERCOMMIT_RATIO,
    'FORKBOX_OVERCOMMIT_RATIO',
  );
  positive('host memory size', opts.hostMemoryBytes, 'the host');
  const capacity = Math.floor(opts.hostMemoryBytes * ratio);
  const perSandbox = opts.perSandboxBytes ?? DEFAULT_PER_SANDBOX_BYTES;
  const minAvailable = opts.minAvailableBytes ?? Math.max(512 * 1024 ** 2, opts.hostMemoryBytes * 0.05);
  const maxPressure = opts.maxPressure ?? DEFAULT_MAX_PRESSURE;
  const freeDisk = opts.freeDiskBytes ?? statfsFree;
  const memoryState = opts.memoryState ?? readMemoryState;

  function refuse(reason: AdmissionRefusal, message: string, details: Record<string, unknown>): never {
    opts.onRefused?.(reason);
    throw new ForkboxError('resource_exhausted', message, { limit: 'memory', reason, ...details });
  }

  async function checkMemory(req: AdmissionRequest): Promise<void> {
    const st = memoryState();
    const what = req.count === 1 ? 'this sandbox' : `these ${req.count} sandboxes`;
    if (st.pressureFull10 !== null && st.pressureFull10 > maxPressure) {
      refuse(
        'memory_pressure',
        `the host is under memory pressure (tasks stalled on memory ${st.pressureFull10}% of the last 10 s, over the ${maxPressure}% forkbox admits at; MemAvailable ${formatBytes(st.availableBytes)}), so ${what} cannot start now. ${ADVICE}, or wait for the pressure to pass.`,
        { pressureFull10: st.pressureFull10, maxPressure, availableBytes: st.availableBytes },
      );
    }
    const need = req.count * perSandbox;
    if (st.availableBytes - need < minAvailable) {
      const use = await opts.sandboxesUseBytes?.().catch(() => null);
      refuse(
        'memory_available',
        `not enough free memory on the host: ${what} need about ${formatBytes(need)} to start, MemAvailable is ${formatBytes(st.availableBytes)}, and forkbox keeps ${formatBytes(minAvailable)} free${use === null || use === undefined ? '' : ` (this daemon's sandboxes use ${formatBytes(use)})`}. ${ADVICE}.`,
        { availableBytes: st.availableBytes, neededBytes: need, minAvailableBytes: minAvailable },
      );
    }
    if (req.committedLimitBytes + req.limitBytes > capacity) {
      const left = Math.max(0, capacity - req.committedLimitBytes);
      refuse(
        'memory_limits',
        `too much memory promised: ${what} ask for memory limits of ${formatBytes(req.limitBytes)} but only ${formatBytes(left)} of limits are left (live sandboxes' limits add up to ${formatBytes(req.committedLimitBytes)} of the ${formatBytes(capacity)} allowed = host memory ${formatBytes(opts.hostMemoryBytes)} × overcommit ratio ${ratio}). Ask for lower limits (--memory / memory_mb), ${ADVICE.charAt(0).toLowerCase()}${ADVICE.slice(1)}, or raise FORKBOX_OVERCOMMIT_RATIO.`,
        {
          requestedBytes: req.limitBytes,
          committedBytes: req.committedLimitBytes,
          capacityBytes: capacity,
          hostMemoryBytes: opts.hostMemoryBytes,
          overcommitRatio: ratio,
        },
      );
    }
  }

  async function checkDisk(promised = 0): Promise<void> {
    let free: number;
    try {
      free = (await freeDisk(opts.stateDir)) - promised;
    } catch (e) {
      throw new ForkboxError(
        'unavailable',
        `cannot check free disk space of the state directory ${opts.stateDir}: ${(e as Error).message}. Check that it exists and is readable.`,
        { stateDir: opts.stateDir },
        { cause: e },
      );
    }
    if (free >= opts.minFreeDiskBytes) return;
    opts.onRefused?.('disk');
    throw new ForkboxError(
      'resource_exhausted',
      `not enough free disk: only ${formatBytes(Math.max(0, free))} free on the filesystem holding ${opts.stateDir}${promised > 0 ? ` once the ${formatBytes(promised)} that live sandboxes' disks may still write is set aside` : ''}, and forkbox keeps at least ${formatBytes(opts.minFreeDiskBytes)} free. Kill sandboxes and delete snapshots or images you no longer need, or free space on that filesystem.`,
      {
        limit: 'disk',
        freeBytes: Math.max(0, free),
        promisedBytes: promised,
        minFreeBytes: opts.minFreeDiskBytes,
        stateDir: opts.stateDir,
      },
    );
  }

  function checkDiskLimits(limits: number[], room: DiskRoom): void {
    const asked = limits.filter((l) => l > 0);
    if (asked.length === 0) return;
    const what = asked.length === 1 ? 'this sandbox asks' : `these ${asked.length} sandboxes ask`;
    const need = room.reserved ? asked.reduce((a, l) => a + l, 0) : Math.max(...asked);
    const have = room.reserved ? room.bytes - opts.minFreeDiskBytes : room.bytes;
    if (need <= have) return;
    opts.onRefused?.('disk');
    const free = Math.max(0, have);
    throw new ForkboxError(
      'resource_exhausted',
      room.reserved
        ? `not enough disk for the disk limit: ${what} for ${formatBytes(need)} but only ${formatBytes(free)} is left on ${room.where} once what live sandboxes may still write and the ${formatBytes(opts.minFreeDiskBytes)} forkbox keeps free are set aside (each disk is promised in full: a host that runs out under one loses its writes; FORKBOX_DISK_OVERCOMMIT trades that for more sandboxes). Ask for less (--disk, disk_mb), kill sandboxes you no longer need, or free space there.`
        : `not enough disk for the disk limit: ${what} for ${formatBytes(need)} but only ${formatBytes(free)} is free on ${room.where}. Ask for less (--disk, disk_mb), kill sandboxes and delete snapshots you no longer need, or free space there.`,
      { limit: 'disk', requestedBytes: need, freeBytes: free, where: room.where, reserved: room.reserved },
    );
  }

  return {
    memoryCapacityBytes: capacity,
    checkMemory,
    checkDisk,
    checkDiskLimits,
  };
}
