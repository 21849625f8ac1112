/**
 * Idmapped mounts (Linux ≥ 5.12) through koffi: a detached clone of a host directory whose owners are
 * shifted by a user namespace's mapping, without a copy. Every layer of a sandbox's root is one
 * (host/idmapped-overlay.ts): files stored for container ids (host 100000 + id) appear as the ids of the
 * sandbox's own block of host uids, and the sandbox's writes are stored back as container ids; the user's
 * project directory is one too (host uid 1000 appears as the block's uid 1000; docs/STORAGE.md, "Project
 * directories"). A clone is never attached anywhere: overlayfs takes it as a layer through
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
  /** The clone's descriptor in this process (another process reaches it as /proc/<our pid>/fd/<fd>). */
  fd: number;
  close(): void;
}

const MOUNT_ATTR_NOSYMFOLLOW = 0x200000n;

/**
 * A detached clone of `dir` (never attached anywhere) with `set` mount attributes, and the user namespace
 * of `nsFd` as its idmap when `set` has MOUNT_ATTR_IDMAP. `dir` must be a real path (no symlink in it is
 * followed at the last component).
 */
function openTreeClone(dir: string, set: bigint, nsFd: number, what: string): IdmappedTree {
  const lc = c();
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
  attr.writeBigUInt64LE(set, 0);
  attr.writeBigUInt64LE(BigInt(Math.max(nsFd, 0)), 24);
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
    throw new SysError('mount_setattr', e, `${JSON.stringify(dir)}, ${what}`);
  }
  let open = true;
  return {
    path: `/proc/self/fd/${fd}`,
    fd,
    close() {
      if (open) lc.close(fd);
      open = false;
    },
  };
}

/**
 * A nosuid, nodev clone of `dir` (read-only unless `writable`) with owners mapped through a user
 * namespace: `ns.fd`, an open nsfs descriptor (host/userns-maker.ts), or the namespace of process `ns.pid`.
 */
export function openIdmappedTree(
  dir: string,
  ns: { fd: number } | { pid: number },
  opts: { writable?: boolean } = {},
): IdmappedTree {
  const lc = c();
  const ownFd = 'pid' in ns;
  const nsFd = ownFd ? lc.open(`/proc/${ns.pid}/ns/user`, O_RDONLY | O_CLOEXEC) : ns.fd;
  if (nsFd < 0) throw new SysError('open', koffi.errno(), `/proc/${'pid' in ns ? ns.pid : '?'}/ns/user`);
  try {
    const ro = opts.writable === true ? 0n : MOUNT_ATTR_RDONLY;
    return openTreeClone(
      dir,
      MOUNT_ATTR_IDMAP | ro | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
      nsFd,
      'MOUNT_ATTR_IDMAP',
    );
  } finally {
    if (ownFd) lc.close(nsFd);
  }
}

/**
 * A read-only, nosuid, nodev clone of `dir` on which no symlink is ever followed (MOUNT_ATTR_NOSYMFOLLOW):
 * a walk of it (the copy driver's `cp -a`) reads links as links, and a directory swapped for a link to a
 * host path while it walks makes that step fail instead of leading out (layers/snapshot-driver.ts).
 */
export function openNoFollowTree(dir: string): IdmappedTree {
  return openTreeClone(
    dir,
    MOUNT_ATTR_NOSYMFOLLOW | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
    -1,
    'MOUNT_ATTR_NOSYMFOLLOW',
  );
}
