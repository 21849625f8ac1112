/**
 * Where the btrfs storage driver keeps sandboxes and snapshot layers (docs/STORAGE.md).
 *
 * - State dir already on btrfs: sandboxes are subvolumes in `<state>/sandboxes`, layers in `<state>/layers`.
 * - Otherwise: a sparse image file `<state>/btrfs.img` (FORKBOX_BTRFS_SIZE, default 64 GiB or half the
 *   host's free space when that is less), formatted once,
 *   attached to a loop device (re-used when one is already attached to that file: `losetup -j`), mounted at
 *   `<state>/btrfs`, and `<state>/btrfs/sandboxes` bind-mounted onto `<state>/sandboxes` so every other
 *   part of forkbox keeps using `paths.sandbox(id)`. Layers live in `<state>/btrfs/layers` (a snapshot must
 *   be on the filesystem of its source).
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  existsSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  statfsSync,
  statSync,
} from 'node:fs';
import { join } from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import { parseSize } from '../../../domain/sizes.ts';
import { runSync } from '../../../util/subprocess.ts';
import { type Mounts, readMountInfo } from '../host/mounts.ts';
import { MS, type Sys } from '../host/sys.ts';
import { isOnBtrfs } from './btrfs-ioctl.ts';

export const DEFAULT_BTRFS_SIZE = 64 * 1024 ** 3;
const DISCARD = 'discard=sync';
/** mkfs.btrfs needs ~114 MiB; below 1 GiB a handful of sandboxes fill it. */
const MIN_BTRFS_SIZE = 1024 ** 3;

export interface BtrfsVolume {
  /** Parent of the sandbox subvolumes (`paths.sandbox(id)` is `<sandboxesDir>/<id>`). */
  sandboxesDir: string;
  layersDir: string;
  /** Null when the state dir itself is on btrfs. */
  loop: { image: string; device: string; mountPoint: string; sizeBytes: number } | null;
  /** Unmount and detach the loop device (a no-op on a state dir that is btrfs itself). */
  detach(): void;
}

/** Parse FORKBOX_BTRFS_SIZE: bytes, or a number with K/M/G/T (powers of 1024, optional "iB"/"B"). */
export function parseBtrfsSize(text: string | undefined): number {
  if (text === undefined || text.trim() === '') return DEFAULT_BTRFS_SIZE;
  let bytes: number;
  try {
    bytes = Math.floor(parseSize(text, 1));
  } catch {
    throw new ForkboxError(
      'invalid_argument',
      `FORKBOX_BTRFS_SIZE=${JSON.stringify(text)} is not a size; use e.g. 64G or 200GiB.`,
    );
  }
  if (bytes < MIN_BTRFS_SIZE) {
    throw new ForkboxError(
      'invalid_argument',
      `FORKBOX_BTRFS_SIZE=${text} is under 1 GiB, too small for sandboxes; use e.g. 64G.`,
    );
  }
  return bytes;
}

const ADVICE = 'install btrfs-progs and util-linux, or set FORKBOX_STORAGE=copy.';
const run = (cmd: string, args: string[]): string => runSync(cmd, args, ADVICE);

function mountAt(path: string) {
  return readMountInfo().filter((m) => m.mountPoint === path);
}

function isEmptyDir(path: string): boolean {
  try {
    return readdirSync(path).length === 0;
  } catch {
    return true;
  }
}

/** The loop device already attached to `image`, if any. */
function attachedLoop(image: string): string | null {
  const out = run('losetup', ['-j', image]).trim();
  const first = out.split('\n')[0] ?? '';
  const dev = first.slice(0, first.indexOf(':'));
  return dev.startsWith('/dev/') ? dev : null;
}

/**
 * The size of a new image when FORKBOX_BTRFS_SIZE is not set: 64 GiB, or half of what the host has free
 * when that is less (whole GiB, at least 1). A sparse image the host cannot back in full is a promise the
 * host may break: writes past its free space fail as I/O errors inside btrfs, which then stops.
 */
export function defaultBtrfsSize(stateDir: string): number {
  const s = statfsSync(stateDir);
  const half = Math.floor((s.bavail * s.bsize) / 2 / 1024 ** 3) * 1024 ** 3;
  return Math.max(MIN_BTRFS_SIZE, Math.min(DEFAULT_BTRFS_SIZE, half));
}

export function openBtrfsVolume(opts: {
  stateDir: string;
  sys: Sys;
  mounts: Mounts;
  sizeText?: string | undefined;
}): BtrfsVolume {
  const { stateDir, sys, mounts } = opts;
  const sandboxesDir = join(stateDir, 'sandboxes');
  if (isOnBtrfs(stateDir)) {
    const layersDir = join(stateDir, 'layers');
    for (const d of [sandboxesDir, layersDir]) {
      mkdirSync(d, { recursive: true, mode: 0o700 });
      chmodSync(d, 0o700);
    }
    if (!isOnBtrfs(sandboxesDir) || !isOnBtrfs(layersDir))
      throw new ForkboxError(
        'conflict',
        `${sandboxesDir} and ${layersDir} must be on the state dir's btrfs filesystem; unmount what is mounted there, or set FORKBOX_STORAGE=copy.`,
      );
    return { sandboxesDir, layersDir, loop: null, detach() {} };
  }

  const image = join(stateDir, 'btrfs.img');
  const mountPoint = join(stateDir, 'btrfs');
  const sized = opts.sizeText !== undefined && opts.sizeText.trim() !== '';
  const sizeBytes = sized || existsSync(image) ? parseBtrfsSize(opts.sizeText) : defaultBtrfsSize(stateDir);
  const mounted = mountAt(mountPoint);
  if (mounted.length > 0 && mounted.some((m) => m.fsType !== 'btrfs'))
    throw new ForkboxError('conflict', `${mountPoint} is mounted but not btrfs; unmount it and start again.`);
  if (!existsSync(image)) {
    // Sparse: the file takes disk space only as sandboxes write.
    const fd = openSync(image, 'wx', 0o600);
    try {
      ftruncateSync(fd, sizeBytes);
    } finally {
      closeSync(fd);
    }
    try {
      // Single copies of data and metadata: on one loop file DUP would only double the writes.
      run('mkfs.btrfs', ['-q', '-L', 'forkbox', '-m', 'single', '-d', 'single', image]);
    } catch (e) {
      spawnSync('rm', ['-f', image]);
      throw e;
    }
  }
  let device = attachedLoop(image);
  // --direct-io: the image's pages are not cached twice (once for btrfs, once for the backing file).
  device ??= run('losetup', ['--find', '--show', '--direct-io=on', image]).trim();
  const current = statSync(image).size;
  const grow = sized && sizeBytes > current;
  if (grow) {
    // FORKBOX_BTRFS_SIZE was raised: grow the image in place (the ENOSPC message says to do this).
    const fd = openSync(image, 'r+');
    try {
      ftruncateSync(fd, sizeBytes);
    } finally {
      closeSync(fd);
    }
    run('losetup', ['--set-capacity', device]);
  }
  mkdirSync(mountPoint, { recursive: true, mode: 0o700 });
  // noatime: reads would otherwise write metadata (and CoW it) in every snapshot's tree.
  // discard=sync: blocks freed at a commit are punched out of the sparse image at that commit. With
  // discard=async, metadata copy-on-write left a whole 1 GiB metadata chunk allocated in the image after
  // 90,000 small files (32 MiB used): the host would store far more than the sandboxes' limits.
  // nosuid, nodev: no file a sandbox made there runs with its owner's ids or reaches a device, whoever
  // finds a way to it (docs/SECURITY.md, "Host users").
  const flags = MS.NOATIME | MS.NOSUID | MS.NODEV;
  if (mounted.length === 0) sys.mount(device, mountPoint, 'btrfs', flags, DISCARD);
  // A volume mounted by an older forkbox (discard=async, no nosuid/nodev) is switched in place.
  else sys.mount(null, mountPoint, null, MS.REMOUNT | flags, DISCARD);
  if (grow) run('btrfs', ['filesystem', 'resize', 'max', mountPoint]);
  const inner = join(mountPoint, 'sandboxes');
  const layersDir = join(mountPoint, 'layers');
  // 0700 all the way (the volume's root too): the sandboxes' files are theirs and forkbox's alone.
  for (const d of [mountPoint, inner, layersDir, sandboxesDir]) {
    mkdirSync(d, { recursive: true, mode: 0o700 });
    chmodSync(d, 0o700);
  }
  if (mountAt(sandboxesDir).length === 0) {
    if (!isEmptyDir(sandboxesDir)) {
      throw new ForkboxError(
        'conflict',
        `${sandboxesDir} holds sandboxes made with the copy storage driver; kill them (forkbox gc) before switching to btrfs, or set FORKBOX_STORAGE=copy.`,
      );
    }
    mounts.bind(inner, sandboxesDir);
  }
  // A bind takes no flags of its own when made: set them on it (also on one an older forkbox made).
  sys.mount(null, sandboxesDir, null, MS.REMOUNT | MS.BIND | flags, null);
  return {
    sandboxesDir,
    layersDir,
    loop: { image, device, mountPoint, sizeBytes: grow ? sizeBytes : current },
    detach() {
      mounts.detach(sandboxesDir);
      mounts.detach(mountPoint);
      // With the filesystem still busy (lazily detached), -d only marks the device to be freed when the
      // last user goes.
      spawnSync('losetup', ['-d', device], { stdio: 'ignore' });
    },
  };
}
