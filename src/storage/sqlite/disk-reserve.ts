/**
 * Room kept for the database on a full disk. A file of zeros (`<state>/db-reserve`, 64 MiB by default)
 * sits beside the database; when a write fails with SQLITE_FULL the file is deleted and the write tried
 * once more, so `kill`, `gc` and deletes — the calls that free space — still record what they did. The
 * reserve is made again (at open and by `gc`) once the filesystem has room for it and some to spare.
 */
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  openSync,
  renameSync,
  rmSync,
  statfsSync,
  statSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';

export const DEFAULT_DB_RESERVE_BYTES = 64 * 1024 * 1024;

export interface DiskReserve {
  readonly path: string;
  readonly bytes: number;
  /** Whether the reserve file is there, whole. */
  held(): boolean;
  /**
   * Make the reserve if it is missing and the filesystem has room for it plus as much again; true when it
   * is held afterwards.
   */
  ensure(): boolean;
  /** Delete the reserve (its blocks go back to the filesystem); true if it was held. */
  release(): boolean;
}

const CHUNK = 1024 * 1024;

/** Where fallocate(1) cannot allocate (a filesystem without it): write the zeros. */
function writeZeros(path: string, bytes: number): void {
  const zeros = Buffer.alloc(CHUNK);
  const fd = openSync(path, 'w', 0o600);
  try {
    for (let done = 0; done < bytes; done += CHUNK) writeSync(fd, zeros, 0, Math.min(CHUNK, bytes - done));
  } finally {
    closeSync(fd);
  }
}

export function createDiskReserve(path: string, bytes = DEFAULT_DB_RESERVE_BYTES): DiskReserve {
  const held = (): boolean => {
    try {
      const st = statSync(path);
      return st.size >= bytes && st.blocks * 512 >= bytes;
    } catch {
      return false;
    }
  };
  return {
    path,
    bytes,
    held,
    ensure() {
      if (bytes <= 0) return false;
      if (held()) return true;
      const s = statfsSync(dirname(path));
      if (s.bavail * s.bsize < 2 * bytes) return false;
      // Allocated, not truncated: a sparse file would hold no blocks to give back.
      const tmp = `${path}.tmp`;
      try {
        closeSync(openSync(tmp, 'w', 0o600));
        const f = spawnSync('fallocate', ['-l', String(bytes), tmp], { stdio: 'ignore' });
        if (f.status !== 0) writeZeros(tmp, bytes);
        renameSync(tmp, path);
        return true;
      } catch {
        return false;
      } finally {
        rmSync(tmp, { force: true });
      }
    },
    release() {
      if (!existsSync(path)) return false;
      rmSync(path, { force: true });
      return true;
    },
  };
}
