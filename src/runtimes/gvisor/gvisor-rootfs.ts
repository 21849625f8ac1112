/**
 * A gvisor sandbox's root on the host: a read-only overlay of the skeleton (its mount points) over the
 * image's layers, each seen through an idmap that shows the ids layers are stored with (host 100000 + N)
 * as container id N — so the sandbox's root owns its files, and no layer is ever written (gVisor keeps the
 * sandbox's writes in its own memory: runsc.ts). Nothing of one sandbox's root is shared with another but
 * the read-only layers.
 */
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { openIdmappedTree } from '../native/host/idmap.ts';
import { MNT_DETACH, MS, type Sys } from '../native/host/sys.ts';
import { makeUserNamespaces } from '../native/host/userns-maker.ts';
import { SKELETON_DIRS } from './gvisor-spec.ts';

/** The ids layers are stored with: container id N is host id STORAGE_START + N (images/shift.ts). */
export const STORAGE_START = 100000;
const STORAGE_SIZE = 65536;

export interface GvisorRootfs {
  /** Mounts the root of a sandbox at `target` (made if missing) over `layers` (topmost first). */
  mount(target: string, layers: string[]): Promise<void>;
  /** Unmounts it (a root not mounted is not an error). */
  unmount(target: string): void;
}

export function createGvisorRootfs(deps: { sys: Sys; skeleton: string }): GvisorRootfs {
  let idmap: Promise<number> | null = null;
  /** One user namespace for every root's idmap (it holds no process; the daemon keeps its descriptor). */
  const idmapFd = () => {
    idmap ??= makeUserNamespaces([{ map: `${STORAGE_START} 0 ${STORAGE_SIZE}\n` }]).then((fds) => {
      const fd = fds[0];
      if (fd === undefined) throw new Error('no user namespace for the idmap');
      return fd;
    });
    idmap.catch(() => {
      idmap = null;
    });
    return idmap;
  };

  function ensureSkeleton(): void {
    for (const d of SKELETON_DIRS) {
      const p = join(deps.skeleton, d);
      mkdirSync(p, { recursive: true, mode: 0o755 });
      chmodSync(p, 0o755);
    }
    chmodSync(deps.skeleton, 0o755);
  }

  return {
    async mount(target, layers) {
      ensureSkeleton();
      mkdirSync(target, { recursive: true, mode: 0o700 });
      const fd = await idmapFd();
      const trees = layers.map((l) => openIdmappedTree(l, { fd }));
      try {
        const data = `lowerdir=${[deps.skeleton, ...trees.map((t) => t.path)].join(':')}`;
        deps.sys.mount('overlay', target, 'overlay', MS.RDONLY | MS.NOSUID | MS.NODEV, data);
      } finally {
        for (const t of trees) t.close();
      }
    },
    unmount(target) {
      try {
        deps.sys.umount2(target, MNT_DETACH);
      } catch (e) {
        const code = (e as { code?: string }).code;
        if (code !== 'EINVAL' && code !== 'ENOENT') throw e;
      }
    },
  };
}
