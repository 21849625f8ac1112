/**
 * Disk limits on the btrfs driver: btrfs *simple quotas* (squota, Linux >= 6.7) with one limit per
 * sandbox subvolume. Every extent — file data and the metadata of every inode, directory entry and
 * xattr — is charged to the subvolume that wrote it, for as long as it is stored, so a sandbox can make
 * the host store at most its limit of its own writes, counted as it writes (no rescans, no backref walks:
 * snapshots stay O(1), unlike full qgroups; docs/STORAGE.md has the measurements and the trade-offs).
 *
 * Calls are ioctls (koffi into libc) with structures from linux/btrfs.h (stable kernel ABI):
 * - BTRFS_IOC_QUOTA_CTL   _IOWR(0x94, 40, { u64 cmd; u64 status })                     cmd 4 = enable simple
 * - BTRFS_IOC_QGROUP_LIMIT _IOR(0x94, 43, { u64 qgroupid; { u64 flags, max_rfer, max_excl, rsv_rfer,
 *                                            rsv_excl } })                              qgroupid 0 = the fd's subvolume
 * - BTRFS_IOC_INO_LOOKUP  _IOWR(0x94, 18, { u64 treeid; u64 objectid; char name[4080] }) → the subvolume id
 * - BTRFS_IOC_FS_INFO      _IOR(0x94, 31, 1024 bytes; fsid at offset 16)               → the sysfs directory
 * Usage is read from /sys/fs/btrfs/<fsid>/qgroups/0_<subvolume id>/referenced.
 */
import { closeSync, constants, existsSync, openSync, readFileSync } from 'node:fs';
import koffi from 'koffi';
import { SysError } from '../host/sys.ts';

const IOC_QUOTA_CTL = 0xc0109428;
const IOC_QGROUP_LIMIT = 0x8030942b;
const IOC_INO_LOOKUP = 0xd0009412;
const IOC_FS_INFO = 0x8400941f;
const QUOTA_CTL_ENABLE_SIMPLE = 4n;
const QGROUP_LIMIT_MAX_RFER = 1n;
const FIRST_FREE_OBJECTID = 256n;

type Fn = (...args: unknown[]) => number;

export interface BtrfsQuotas {
  /** 'squota' (enabled by forkbox) or 'qgroup' (full qgroups, enabled by someone else: used as they are). */
  readonly mode: string;
  /** Limit the subvolume at `dir` to `bytes` of what it stores (its data and metadata). */
  limit(dir: string, bytes: number): void;
  /** Bytes charged to the subvolume at `dir` (updated at each transaction commit). */
  usage(dir: string): number;
}

function openDir(path: string): number {
  return openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
}

function fsidHex(buf: Buffer): string {
  const h = buf.subarray(16, 32).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * Quotas on the btrfs filesystem holding `dir`: enabled as simple quotas when off, used as they are when
 * someone already enabled them. Throws a SysError when the kernel cannot (simple quotas need Linux 6.7).
 */
export function openBtrfsQuotas(dir: string): BtrfsQuotas {
  const ioctl = koffi.load('libc.so.6').func('int ioctl(int fd, unsigned long req, ...)') as Fn;
  const call = (what: string, path: string, req: number, args: Buffer): void => {
    const fd = openDir(path);
    try {
      if (ioctl(fd, req, 'void *', args) !== 0) throw new SysError(what, koffi.errno(), JSON.stringify(path));
    } finally {
      closeSync(fd);
    }
  };
  const info = Buffer.alloc(1024);
  call('ioctl(BTRFS_IOC_FS_INFO)', dir, IOC_FS_INFO, info);
  const sysfs = `/sys/fs/btrfs/${fsidHex(info)}/qgroups`;
  if (!existsSync(sysfs)) {
    const ctl = Buffer.alloc(16);
    ctl.writeBigUInt64LE(QUOTA_CTL_ENABLE_SIMPLE, 0);
    call('ioctl(BTRFS_IOC_QUOTA_CTL, enable simple quotas)', dir, IOC_QUOTA_CTL, ctl);
  }
  let mode = 'qgroup';
  try {
    mode = readFileSync(`${sysfs}/mode`, 'utf8').trim();
  } catch {
    // kernels before the mode file had full qgroups only
  }
  const subvolumeId = (path: string): bigint => {
    const args = Buffer.alloc(4096);
    args.writeBigUInt64LE(FIRST_FREE_OBJECTID, 8);
    call('ioctl(BTRFS_IOC_INO_LOOKUP)', path, IOC_INO_LOOKUP, args);
    return args.readBigUInt64LE(0);
  };
  return {
    mode,
    limit(path, bytes) {
      const args = Buffer.alloc(48);
      args.writeBigUInt64LE(0n, 0); // the subvolume the fd is in
      args.writeBigUInt64LE(QGROUP_LIMIT_MAX_RFER, 8);
      args.writeBigUInt64LE(BigInt(Math.floor(bytes)), 16);
      call('ioctl(BTRFS_IOC_QGROUP_LIMIT)', path, IOC_QGROUP_LIMIT, args);
    },
    usage(path) {
      return Number(readFileSync(`${sysfs}/0_${subvolumeId(path)}/referenced`, 'utf8').trim());
    },
  };
}
