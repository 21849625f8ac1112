/**
 * Disk limits on the copy driver: each limited sandbox dir is the mount point of its own small ext4
 * filesystem, a sparse image `<state>/disks/<id>.img` of exactly the limit with a fixed inode count, on a
 * loop device. The kernel refuses writes past either with ENOSPC, whatever the writer's capabilities
 * (project quotas would be cheaper but this kernel has no quota formats built in; docs/STORAGE.md).
 *
 * - The image is made by mkfs.ext4 without a journal (a sandbox's upper does not outlive a host crash)
 *   and without zeroing inode tables (`lazy_itable_init`, and `noinit_itable` at mount so the kernel
 *   does not zero them later either): a 10 GiB image with 1,000,000 inodes takes ~230 KiB on the host.
 * - The loop device is set up with LOOP_CONFIGURE and LO_FLAGS_AUTOCLEAR: it detaches itself when the
 *   filesystem is unmounted (or when we die before mounting it), so no device outlives its sandbox.
 * - Mounted with `discard`: space the sandbox frees is punched out of the image, back to the host.
 */
import {
  closeSync,
  constants,
  existsSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  statSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import koffi from 'koffi';
import { ForkboxError } from '../../../domain/errors.ts';
import { runOk, which } from '../../../util/subprocess.ts';
import { isMountPoint, type Mounts } from '../host/mounts.ts';
import { MS, type Sys, SysError } from '../host/sys.ts';

const LOOP_CTL_GET_FREE = 0x4c82;
const LOOP_CONFIGURE = 0x4c0a;
const LO_FLAGS_AUTOCLEAR = 4;
const LO_FLAGS_DIRECT_IO = 16;
/** struct loop_config { u32 fd; u32 block_size; struct loop_info64 info (232 bytes); u64 reserved[8] }. */
const LOOP_CONFIG_SIZE = 304;
/** Offset of info.lo_flags in struct loop_config. */
const LO_FLAGS_OFFSET = 8 + 52;
const EBUSY = 16;
/** At most one inode per this many bytes of the limit: inode tables beyond that would eat the space. */
const BYTES_PER_INODE = 4096;

type Fn = (...args: unknown[]) => number;

export interface DiskQuota {
  bytes: number;
  inodes: number;
}

export interface Ext4Disks {
  /** Mount a fresh ext4 of `quota` at the existing empty directory `dir`. */
  make(dir: string, quota: DiskQuota): Promise<void>;
  /** Whether `dir` has a disk of its own (an image exists for it). */
  has(dir: string): boolean;
  /** Mount `dir`'s existing disk at `dir` again (after a reboot or container restart); no-op if mounted. */
  reopen(dir: string): void;
  /** Unmount `dir`'s disk and delete its image (no-op without one). */
  remove(dir: string): void;
  /** What the disk at `dir` holds. */
  usage(dir: string): { bytes: number; inodes: number };
  /** Free bytes on the host filesystem holding the images. */
  free(): number;
  /**
   * Bytes the images may still take from the host: each one's size less what the host has allocated for
   * it (they are sparse). A host that runs out under a loop image fails its writes with I/O errors.
   */
  promised(): number;
  /**
   * How many times over the host's free space images may be promised (FORKBOX_DISK_OVERCOMMIT, default 1:
   * never, so no sandbox's writes can be lost to a full host).
   */
  readonly overcommit: number;
  /** Images whose sandbox id is not in `live` (for gc). */
  orphans(live: Set<string>): string[];
}

/** Why per-sandbox ext4 disks cannot be made here, or null when they can. */
export function ext4DisksMissing(): string | null {
  if (!/\text4$/m.test(readFileSync('/proc/filesystems', 'utf8'))) return 'the kernel has no ext4';
  if (which('mkfs.ext4') === null) return 'mkfs.ext4 is not installed (apt-get install e2fsprogs)';
  if (!existsSync('/dev/loop-control')) return 'no loop devices (/dev/loop-control is missing)';
  return null;
}

export function createExt4Disks(opts: {
  disksDir: string;
  sys: Sys;
  mounts: Mounts;
  overcommit?: number;
}): Ext4Disks {
  const { disksDir, sys, mounts } = opts;
  const overcommit = opts.overcommit ?? 1;
  let ioctl: Fn | undefined;
  const io = (): Fn => {
    ioctl ??= koffi.load('libc.so.6').func('int ioctl(int fd, unsigned long req, ...)') as Fn;
    return ioctl;
  };
  const imageOf = (dir: string) => join(disksDir, `${basename(dir)}.img`);

  /** Attach `image` to a free loop device (autoclear); returns the device path and its open fd. */
  function attach(image: string): { device: string; fd: number } {
    const backing = openSync(image, constants.O_RDWR);
    try {
      for (let attempt = 0; attempt < 10; attempt++) {
        const ctl = openSync('/dev/loop-control', constants.O_RDWR);
        let n: number;
        try {
          n = io()(ctl, LOOP_CTL_GET_FREE);
          if (n < 0) throw new SysError('ioctl(LOOP_CTL_GET_FREE)', koffi.errno(), '/dev/loop-control');
        } finally {
          closeSync(ctl);
        }
        const device = `/dev/loop${n}`;
        const fd = openSync(device, constants.O_RDWR);
        const cfg = Buffer.alloc(LOOP_CONFIG_SIZE);
        cfg.writeUInt32LE(backing, 0);
        cfg.writeUInt32LE(LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO, LO_FLAGS_OFFSET);
        if (io()(fd, LOOP_CONFIGURE, 'void *', cfg) === 0) return { device, fd };
        const errno = koffi.errno();
        closeSync(fd);
        // Another process took the device between GET_FREE and CONFIGURE: ask for another.
        if (errno !== EBUSY) throw new SysError('ioctl(LOOP_CONFIGURE)', errno, `${device} <- ${image}`);
      }
      throw new ForkboxError('unavailable', `no free loop device for ${image} after 10 tries; try again.`);
    } finally {
      closeSync(backing);
    }
  }

  /** Mount `image` at `dir` through a loop device that detaches itself once the filesystem is unmounted. */
  function mountImage(image: string, dir: string): void {
    const { device, fd: loop } = attach(image);
    try {
      // nosuid, nodev: nothing the sandbox made there runs privileged or reaches a device from the host.
      sys.mount(device, dir, 'ext4', MS.NOATIME | MS.NOSUID | MS.NODEV, 'noinit_itable,discard');
    } finally {
      // With the filesystem mounted the device stays; unmounted (or never mounted), it detaches.
      closeSync(loop);
    }
  }

  function imageNames(): string[] {
    try {
      return readdirSync(disksDir).filter((n) => n.endsWith('.img'));
    } catch {
      return [];
    }
  }

  return {
    overcommit,
    async make(dir, quota) {
      mkdirSync(disksDir, { recursive: true, mode: 0o700 });
      const image = imageOf(dir);
      const inodes = Math.max(1024, Math.min(quota.inodes, Math.floor(quota.bytes / BYTES_PER_INODE)));
      const fd = openSync(image, 'wx', 0o600);
      try {
        // Sparse: the image takes host space only as the sandbox writes.
        ftruncateSync(fd, quota.bytes);
      } finally {
        closeSync(fd);
      }
      try {
        await runOk('mkfs.ext4', [
          '-q',
          '-F',
          '-O',
          '^has_journal,^resize_inode',
          '-N',
          String(inodes),
          '-m',
          '0',
          '-b',
          '4096',
          '-E',
          'lazy_itable_init=1,nodiscard,root_owner=0:0',
          image,
        ]);
        mountImage(image, dir);
      } catch (e) {
        rmSync(image, { force: true });
        throw e;
      }
    },

    has: (dir) => existsSync(imageOf(dir)),

    reopen(dir) {
      if (!isMountPoint(dir)) mountImage(imageOf(dir), dir);
    },

    remove(dir) {
      mounts.detach(dir);
      // Unlinking an image still held by a lazily detached mount is fine: its blocks go when it is released.
      rmSync(imageOf(dir), { force: true });
    },

    usage(dir) {
      const s = statfsSync(dir);
      return { bytes: (s.blocks - s.bfree) * s.bsize, inodes: s.files - s.ffree };
    },

    free() {
      mkdirSync(disksDir, { recursive: true, mode: 0o700 });
      const s = statfsSync(disksDir);
      return s.bavail * s.bsize;
    },

    promised() {
      let total = 0;
      for (const n of imageNames()) {
        try {
          const st = statSync(join(disksDir, n));
          total += Math.max(0, st.size - st.blocks * 512);
        } catch {
          // removed meanwhile
        }
      }
      return total;
    },

    orphans(live) {
      return imageNames()
        .filter((n) => !live.has(n.slice(0, -4)))
        .map((n) => join(disksDir, n));
    },
  };
}
