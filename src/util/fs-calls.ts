/**
 * File system calls Node does not expose, straight to libc (util/libc.ts): extended attributes, mknod and
 * lazy unmount. No getfattr/setfattr/mknod/umount process per call, and no text to parse.
 * Every call throws a SysError (errno, code) on failure, except where a missing attribute is an answer.
 */
import koffi from 'koffi';
import { bindLibc, SysError } from './libc.ts';

// Values and name lists go through raw Buffers.
const c = bindLibc({
  getxattr: 'long getxattr(const char *path, const char *name, void *value, size_t size)',
  lgetxattr: 'long lgetxattr(const char *path, const char *name, void *value, size_t size)',
  lsetxattr: 'int lsetxattr(const char *path, const char *name, const void *value, size_t size, int flags)',
  llistxattr: 'long llistxattr(const char *path, void *list, size_t size)',
  mknod: 'int mknod(const char *path, uint32_t mode, uint64_t dev)',
  umount2: 'int umount2(const char *target, int flags)',
});

/** The kernel's limit on one xattr value (XATTR_SIZE_MAX) and on a name list (XATTR_LIST_MAX). */
const XATTR_MAX = 65536;
const ENODATA = 61;
const S_IFCHR = 0o020000;
const MNT_DETACH = 2;

/**
 * One extended attribute's value, or null when the file does not carry it. `follow`: through a symlink
 * to its target (needed for /proc/<pid>/fd/N links, which name exactly the inode a process holds);
 * by default the attribute of the link itself.
 */
export function getXattr(path: string, name: string, opts: { follow?: boolean } = {}): Buffer | null {
  const buf = Buffer.alloc(XATTR_MAX);
  const n = (opts.follow ? c().getxattr : c().lgetxattr)(path, name, buf, buf.length);
  if (n < 0) {
    const e = koffi.errno();
    if (e === ENODATA) return null;
    throw new SysError(opts.follow ? 'getxattr' : 'lgetxattr', e, `${JSON.stringify(path)}, ${name}`);
  }
  return Buffer.from(buf.subarray(0, n));
}

/** Set an extended attribute on the file itself (a symlink's own, never its target's). */
export function setXattr(path: string, name: string, value: Buffer): void {
  if (c().lsetxattr(path, name, value, value.length, 0) !== 0)
    throw new SysError('lsetxattr', koffi.errno(), `${JSON.stringify(path)}, ${name}, ${value.length} bytes`);
}

/** The names of the extended attributes a file (a symlink itself, not its target) carries. */
export function listXattrs(path: string): string[] {
  const buf = Buffer.alloc(XATTR_MAX);
  const n = c().llistxattr(path, buf, buf.length);
  if (n < 0) throw new SysError('llistxattr', koffi.errno(), JSON.stringify(path));
  return buf.subarray(0, n).toString('utf8').split('\0').filter(Boolean);
}

/** Make a character device node (`mode`: permission bits) — 0/0 is an overlayfs whiteout. */
export function mknodChar(path: string, mode: number, major: number, minor: number): void {
  // Linux's new_encode_dev layout, as glibc's makedev builds it.
  const dev =
    (BigInt(minor & 0xff) | (BigInt(major & 0xfff) << 8n) | (BigInt(minor & ~0xff) << 12n)) +
    (BigInt(major & ~0xfff) << 32n);
  if (c().mknod(path, S_IFCHR | (mode & 0o7777), dev) !== 0)
    throw new SysError('mknod', koffi.errno(), `${JSON.stringify(path)}, char ${major}:${minor}`);
}

/** umount2(2) with its flags (MNT_DETACH = 2: lazy). */
export function umount2(target: string, flags: number): void {
  if (c().umount2(target, flags) !== 0)
    throw new SysError('umount2', koffi.errno(), `${JSON.stringify(target)}, flags ${flags}`);
}

/** Detach a mount now, cleaned up once nothing uses it (umount -l). */
export function detachMount(target: string): void {
  umount2(target, MNT_DETACH);
}
