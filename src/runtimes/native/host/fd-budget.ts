/**
 * The daemon's file descriptors. At start the daemon raises its RLIMIT_NOFILE soft limit to the hard
 * limit (Node does too, but forkbox does not rely on it), and it keeps a reserve: a create or fork that
 * would leave fewer than `reserve` descriptors free is refused with a clear error, so the API, the
 * sandboxes already running and their control sockets always have descriptors to work with.
 */
import { readdirSync } from 'node:fs';
import { ForkboxError } from '../../../domain/errors.ts';
import type { FdUsage } from '../../../service/host-metrics.ts';

/** Descriptors a live sandbox holds in the daemon: its control socket's listener and its agent's link. */
export const FDS_PER_SANDBOX = 2;
/** Descriptors a create or fork uses for a moment (cgroup files, mounts, its wave's sockets). */
export const FDS_PER_SPAWN = 8;

export interface FdBudget {
  usage(): FdUsage;
  /** Throws `resource_exhausted` when `sandboxes` more would eat into the reserve. */
  check(sandboxes: number): void;
  readonly reserve: number;
}

export function countOpenFds(): number {
  return readdirSync('/proc/self/fd').length;
}

/** The reserve for a limit: an eighth of it, at least 256 and at most 4096. */
export function reserveFor(limit: number): number {
  if (!Number.isFinite(limit)) return 4096;
  return Math.max(256, Math.min(4096, Math.floor(limit / 8)));
}

export function createFdBudget(opts: { limit: number; reserve?: number; openFds?: () => number }): FdBudget {
  const reserve = opts.reserve ?? reserveFor(opts.limit);
  const open = opts.openFds ?? countOpenFds;
  return {
    reserve,
    usage: () => ({ open: open(), limit: opts.limit }),
    check(sandboxes) {
      const now = open();
      const need = sandboxes * (FDS_PER_SANDBOX + FDS_PER_SPAWN);
      if (now + need + reserve <= opts.limit) return;
      throw new ForkboxError(
        'resource_exhausted',
        `the daemon is low on file descriptors: ${now} of its ${opts.limit} are open, ${sandboxes} more sandbox(es) need about ${need}, and ${reserve} are kept for the API and the sandboxes already running. Kill sandboxes you no longer need, or raise the daemon's open-files limit (LimitNOFILE= in its service unit, or 'ulimit -Hn' before 'forkbox serve').`,
        { limit: 'fds', openFds: now, fdLimit: opts.limit, reserve, sandboxes },
      );
    },
  };
}
