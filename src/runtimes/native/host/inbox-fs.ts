/**
 * The inbox tree (`<state>/inbox`: control sockets and the mount points of sandboxes being made) lives on
 * a tmpfs. Every create or fork makes and removes a few directories and a socket there; on ext4 each new
 * inode cost ~0.5 ms once many had just been deleted (the allocator scans for recently freed inodes), which
 * was a fifth of the host's time in a fork of 100. Nothing in it needs to outlive a reboot.
 *
 * The tmpfs stays mounted while sandboxes live (they outlive a daemon restart, and their sockets and mounts
 * are in it); `close({ inUse: false })` unmounts it.
 */
import { chmodSync, mkdirSync, readdirSync } from 'node:fs';
import type { Logger } from '../../../domain/logger.ts';
import { type Mounts, readMountInfo } from './mounts.ts';
import { MS, type Sys } from './sys.ts';

export interface InboxFs {
  /** Unmount the tmpfs when nothing lives in it any more (a no-op when the tree stayed on disk). */
  close(opts: { inUse: boolean }): void;
}

export function openInboxFs(opts: { dir: string; sys: Sys; mounts: Mounts; log: Logger }): InboxFs {
  const { dir, sys, mounts, log } = opts;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const here = readMountInfo().filter((m) => m.mountPoint === dir);
  let tmpfs = here.some((m) => m.fsType === 'tmpfs');
  // One an older forkbox mounted: nosuid and nodev from now on (the binds already made keep theirs).
  if (tmpfs && here.some((m) => !/\bnosuid\b/.test(m.options) || !/\bnodev\b/.test(m.options)))
    sys.mount(null, dir, null, MS.REMOUNT | MS.NOSUID | MS.NODEV, null);
  if (!tmpfs && here.length === 0) {
    if (readdirSync(dir).length === 0) {
      // 0700: no host user enters (runc opens a template's inbox as root, and each sandbox sees only its
      // own inbox, bound as its /.forkbox/inbox). nosuid and nodev, which the inboxes' binds into templates
      // and sandboxes keep (runc's asks for both); not noexec, which that bind does not ask for and which
      // its lock would then refuse. Nothing in it is a program or a device: directories and sockets.
      sys.mount('tmpfs', dir, 'tmpfs', MS.NOSUID | MS.NODEV, 'mode=0700,size=64m');
      tmpfs = true;
    } else {
      // Inboxes of sandboxes made before the tmpfs existed: hiding them would cut those sandboxes off.
      log.info(
        { inbox: dir },
        'inbox tree stays on disk until its sandboxes are gone (then a tmpfs is used)',
      );
    }
  }
  return {
    close({ inUse }) {
      if (tmpfs && !inUse) mounts.detach(dir);
    },
  };
}
