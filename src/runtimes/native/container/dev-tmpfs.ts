/**
 * The size of a sandbox's `/dev` and `/dev/shm` tmpfs (each), from its memory limit. tmpfs pages are
 * charged to the sandbox's memory cgroup and cannot be reclaimed: two full tmpfs of the default 64 MiB would
 * leave a 128 MiB sandbox nothing, and its OOM killer would then be left with only the agent. Each gets an
 * eighth of the limit (between 1 and 64 MiB), so filling both takes at most a quarter of it.
 */
import { MiB } from '../../../domain/sizes.ts';

export const DEV_TMPFS_MAX_BYTES = 64 * MiB;
export const DEV_TMPFS_MIN_BYTES = MiB;

export function devTmpfsBytes(memoryBytes: number): number {
  if (!Number.isFinite(memoryBytes) || memoryBytes <= 0) return DEV_TMPFS_MAX_BYTES;
  const eighth = Math.floor(memoryBytes / 8 / MiB) * MiB;
  return Math.min(DEV_TMPFS_MAX_BYTES, Math.max(DEV_TMPFS_MIN_BYTES, eighth));
}
