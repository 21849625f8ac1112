/**
 * Idmapped mounts (Linux ≥ 5.12) through koffi: a detached clone of a host directory whose owners are
 * shifted by a user namespace's mapping, so files owned by host uid 1000 appear as 101000 (the sandbox's
 * uid 1000) without a copy. Used for the user's project directory (docs/STORAGE.md, "Project directories").
 * The clone is read-only and never attached anywhere: overlayfs takes it as a lower layer through
 * `/proc/self/fd/<fd>`, and keeps its own reference once mounted, so the fd is closed right after.
 */
import koffi from 'koffi';
import { SysError } from './sys.ts';

// Syscall numbers of the new mount API: one table for every architecture (asm-generic, since 5.2/5.12).
const SYS_OPEN_TREE = 428;
const SYS_MOUNT_SETATTR = 442;
const OPEN_TREE_CLONE = 1;
const O_CLOEXEC = 0x80000;
const O_RDONLY = 0;
const AT_FDCWD = -100;
const AT_EMPTY_PATH = 0x1000;
const AT_SYMLINK_NOFOLLOW = 0x100;
const MOUNT_ATTR_RDONLY = 0x1n;
const MOUNT_ATTR_NOSUID = 0x2n;
const MOUNT_ATTR_NODEV = 0x4n;
const MOUNT_ATTR_IDMAP = 0x100000n;

type Fn = (...args: unknown[]) => number;
let libc: { syscall: Fn; open: Fn; close: Fn } | undefined;
function c() {
  if (!libc) {
    const lib = koffi.load('libc.so.6');
    libc = {
      syscall: lib.func('long syscall(long number, ...)') as Fn,
      open: lib.func('int open(const char *path, int flags)') as Fn,
      close: lib.func('int close(int fd)') as Fn,
    };
  }
  return libc;
}

export interface IdmappedTree {
  /** A path overlayfs (or anything else) can open the clone by, while `close` has not been called. */
  path: string;
  close(): void;
}

/**
 * A read-only, nosuid, nodev clone of `dir` with owners mapped through the user namespace of `nsPid`.
 * `dir` must be a real path (no symlink in it is followed at the last component).
 */
export function openIdmappedTree(dir: string, nsPid: number): IdmappedTree {
  const lc = c();
  const nsFd = lc.open(`/proc/${nsPid}/ns/user`, O_RDONLY | O_CLOEXEC);
  if (nsFd < 0) throw new SysError('open', koffi.errno(), `/proc/${nsPid}/ns/user`);
  try {
    const fd = lc.syscall(
      SYS_OPEN_TREE,
      'int',
      AT_FDCWD,
      'str',
      dir,
      'uint',
      OPEN_TREE_CLONE | O_CLOEXEC | AT_SYMLINK_NOFOLLOW,
    );
    if (fd < 0) throw new SysError('open_tree', koffi.errno(), JSON.stringify(dir));
    // struct mount_attr { u64 attr_set, attr_clr, propagation, userns_fd }
    const attr = Buffer.alloc(32);
    attr.writeBigUInt64LE(MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0);
    attr.writeBigUInt64LE(BigInt(nsFd), 24);
    const r = lc.syscall(
      SYS_MOUNT_SETATTR,
      'int',
      fd,
      'str',
      '',
      'uint',
      AT_EMPTY_PATH,
      'void *',
      attr,
      'size_t',
      32,
    );
    if (r < 0) {
      const e = koffi.errno();
      lc.close(fd);
      throw new SysError('mount_setattr', e, `${JSON.stringify(dir)}, MOUNT_ATTR_IDMAP`);
    }
    let open = true;
    return {
      path: `/proc/self/fd/${fd}`,
      close() {
        if (open) lc.close(fd);
        open = false;
      },
    };
  } finally {
    lc.close(nsFd);
  }
}
