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
 * - the state dir's filesystem has less than `minFreeDiskBytes` free.
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
  /** Throws `resource_exhausted` if the state directory's filesystem has less than the minimum free. */
  checkDisk(): Promise<void>;
  /**
   * Throws `resource_exhausted` when one sandbox's disk limit is more than its storage has free: it could
   * not get what it was promised. Limits are not reserved (thin provisioning): a full storage still fails
   * writes with its own error.
   */
  checkDiskLimit(limitBytes: number, free: { bytes: number; where: string }): void;
  /** Memory, then disk. */
  check(req: AdmissionRequest): Promise<void>;
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
    opts.onRefused?.('disk');
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
    async check(req) {
      await checkMemory(req);
      await checkDisk();
    },
  };
}
