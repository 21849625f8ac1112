/**
 * btrfs subvolume operations through ioctl(2) (koffi into libc) instead of a `btrfs` process per call:
 * spawning btrfs-progs costs milliseconds, and a fork of 100 children creates 100 subvolumes.
 *
 * Structures and request numbers are from linux/btrfs.h (stable kernel ABI):
 * - struct btrfs_ioctl_vol_args    { __s64 fd; char name[4088]; }                       (4096 bytes)
 * - struct btrfs_ioctl_vol_args_v2 { __s64 fd; __u64 transid; __u64 flags; __u64 unused[4];
 *                                    char name[4040]; }                                  (4096 bytes)
 * Both are _IOW(0x94, nr, 4096) = 0x50009400 | nr.
 */
import { closeSync, constants, fstatSync, openSync, statfsSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import koffi from 'koffi';
import { SysError } from '../host/sys.ts';

export const BTRFS_SUPER_MAGIC = 0x9123683e;
/** The root directory of every btrfs subvolume has this inode number. */
export const BTRFS_FIRST_FREE_OBJECTID = 256;

const IOC_SUBVOL_CREATE = 0x5000940e;
const IOC_SNAP_DESTROY = 0x5000940f;
const IOC_SNAP_CREATE_V2 = 0x50009417;
const SUBVOL_RDONLY = 2n;
const VOL_ARGS_SIZE = 4096;
const NAME_MAX_V1 = 4087;
const NAME_MAX_V2 = 4039;

type Fn = (...args: unknown[]) => number;

export interface BtrfsIoctl {
  /** Create an empty subvolume at `path` (its parent directory must exist on btrfs). */
  createSubvolume(path: string): void;
  /** Snapshot the subvolume `source` at `dest` (same filesystem); read-only when asked. */
  snapshot(source: string, dest: string, readOnly: boolean): void;
  /** Delete the subvolume at `path` (space is reclaimed in the background by btrfs's cleaner). */
  deleteSubvolume(path: string): void;
  /** syncfs(2) on the filesystem holding `path`. */
  syncfs(path: string): void;
}

/** Whether `path` is on btrfs (false when it does not exist). */
export function isOnBtrfs(path: string): boolean {
  try {
    return statfsSync(path).type === BTRFS_SUPER_MAGIC;
  } catch {
    return false;
  }
}

/** Whether `path` is the root of a btrfs subvolume (a snapshot included). */
export function isSubvolume(path: string): boolean {
  if (!isOnBtrfs(path)) return false;
  const fd = openDir(path);
  try {
    return fstatSync(fd).ino === BTRFS_FIRST_FREE_OBJECTID;
  } finally {
    closeSync(fd);
  }
}

function openDir(path: string): number {
  // O_NOFOLLOW: the state dir is root-owned, but a symlink there is never what we mean to operate on.
  return openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
}

export function createBtrfsIoctl(): BtrfsIoctl {
  let lib: { ioctl: Fn; syncfs: Fn } | undefined;
  const c = () => {
    if (!lib) {
      const l = koffi.load('libc.so.6');
      lib = {
        // ioctl is variadic in libc; declaring it so keeps the calling convention right on every ABI.
        ioctl: l.func('int ioctl(int fd, unsigned long req, ...)') as Fn,
        syncfs: l.func('int syncfs(int fd)') as Fn,
      };
    }
    return lib;
  };

  function call(what: string, dirFd: number, req: number, args: Buffer, detail: string): void {
    if (c().ioctl(dirFd, req, 'void *', args) !== 0) {
      const e = koffi.errno();
      throw new SysError(what, e, detail);
    }
  }

  function nameArg(name: string, offset: number, max: number, buf: Buffer): void {
    const bytes = Buffer.from(name);
    if (bytes.length > max || name.includes('/') || name === '' || name === '.' || name === '..')
      throw new Error(`bad subvolume name ${JSON.stringify(name)}`);
    bytes.copy(buf, offset);
  }

  return {
    createSubvolume(path) {
      const args = Buffer.alloc(VOL_ARGS_SIZE);
      nameArg(basename(path), 8, NAME_MAX_V1, args);
      const dir = openDir(dirname(path));
      try {
        call('ioctl(BTRFS_IOC_SUBVOL_CREATE)', dir, IOC_SUBVOL_CREATE, args, JSON.stringify(path));
      } finally {
        closeSync(dir);
      }
    },

    snapshot(source, dest, readOnly) {
      const args = Buffer.alloc(VOL_ARGS_SIZE);
      const src = openDir(source);
      try {
        args.writeBigInt64LE(BigInt(src), 0);
        args.writeBigUInt64LE(readOnly ? SUBVOL_RDONLY : 0n, 16);
        nameArg(basename(dest), 56, NAME_MAX_V2, args);
        const dir = openDir(dirname(dest));
        try {
          call(
            'ioctl(BTRFS_IOC_SNAP_CREATE_V2)',
            dir,
            IOC_SNAP_CREATE_V2,
            args,
            `${JSON.stringify(source)} -> ${JSON.stringify(dest)}`,
          );
        } finally {
          closeSync(dir);
        }
      } finally {
        closeSync(src);
      }
    },

    deleteSubvolume(path) {
      const args = Buffer.alloc(VOL_ARGS_SIZE);
      nameArg(basename(path), 8, NAME_MAX_V1, args);
      const dir = openDir(dirname(path));
      try {
        call('ioctl(BTRFS_IOC_SNAP_DESTROY)', dir, IOC_SNAP_DESTROY, args, JSON.stringify(path));
      } finally {
        closeSync(dir);
      }
    },

    syncfs(path) {
      const fd = openDir(path);
      try {
        if (c().syncfs(fd) !== 0) throw new SysError('syncfs', koffi.errno(), JSON.stringify(path));
      } finally {
        closeSync(fd);
      }
    },
  };
}
