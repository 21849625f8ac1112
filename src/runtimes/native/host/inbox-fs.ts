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
import type { Sys } from './sys.ts';

export interface InboxFs {
  /** Unmount the tmpfs when nothing lives in it any more (a no-op when the tree stayed on disk). */
  close(opts: { inUse: boolean }): void;
}

export function openInboxFs(opts: { dir: string; sys: Sys; mounts: Mounts; log: Logger }): InboxFs {
  const { dir, sys, mounts, log } = opts;
  mkdirSync(dir, { recursive: true, mode: 0o711 });
  chmodSync(dir, 0o711);
  const here = readMountInfo().filter((m) => m.mountPoint === dir);
  let tmpfs = here.some((m) => m.fsType === 'tmpfs');
  if (!tmpfs && here.length === 0) {
    if (readdirSync(dir).length === 0) {
      // 0711 like the state dir. No nosuid/nodev/noexec: inboxes are bound into sandboxes, where mount
      // flags of the host are locked, and runc's bind of a template's inbox (without them) then fails.
      // Nothing in it is a program or a device: only host-root-owned directories and sockets.
      sys.mount('tmpfs', dir, 'tmpfs', 0, 'mode=0711,size=64m');
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
