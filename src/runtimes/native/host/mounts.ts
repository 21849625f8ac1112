/** Host-side mount helpers for the native runtime (mount(2) through koffi: no mount(8) process per call). */
import { chmodSync, mkdirSync } from 'node:fs';
import { ForkboxError } from '../../../domain/errors.ts';
import { isMountPoint, mountsUnder } from '../../../util/mountinfo.ts';
import { MNT_DETACH, MS, type Sys } from './sys.ts';

export { isMountPoint, type MountInfo, mountsUnder, readMountInfo } from '../../../util/mountinfo.ts';

export function createMounts(sys: Sys) {
  return {
    /**
     * Make `dir` a bind mount of itself with shared propagation. Every inbox is one *before* the
     * sandbox that sees it starts: this host's `/` may be private, and then mounts the host makes
     * under the inbox later would not propagate into the sandbox.
     */
    sharedSelfBind(dir: string): void {
      // A directory we just created cannot be a mount point yet: skip the mountinfo scan, which grows
      // with every live sandbox (it dominated forks of many children).
      const fresh = mkdirSync(dir, { recursive: true, mode: 0o755 }) !== undefined;
      // 0755 whatever the umask: the sandbox's root (an unprivileged host uid) reaches its socket here.
      if (fresh) chmodSync(dir, 0o755);
      if (fresh || !isMountPoint(dir)) sys.mount(dir, dir, null, MS.BIND, null);
      sys.mount(null, dir, null, MS.SHARED, null);
    },

    bind(source: string, target: string): void {
      sys.mount(source, target, null, MS.BIND, null);
    },

    overlay(target: string, lowers: string[], upper: string, work: string): void {
      // Absolute layer paths are short (<state>/layers/<12 hex>), so ~80 layers fit in the one page
      // the legacy mount options allow (a fork adds one layer; pid namespaces cap forks of forks at ~30).
      const data = `lowerdir=${lowers.join(':')},upperdir=${upper},workdir=${work}`;
      if (data.length > 4000) {
        // Reached only with a very long state dir path (each layer is named by its absolute path).
        throw new ForkboxError(
          'resource_exhausted',
          `the overlay mount options for ${target} are ${data.length} bytes, over the kernel's one-page limit (${lowers.length} layers). Use a state dir with a shorter path (--state-dir).`,
          { layers: lowers.length, bytes: data.length },
        );
      }
      sys.mount('overlay', target, 'overlay', 0, data);
    },

    /** Lazy unmount; a path that is not mounted (EINVAL) or gone (ENOENT) is not an error. */
    detach(target: string): void {
      try {
        sys.umount2(target, MNT_DETACH);
      } catch (e) {
        const code = (e as { code?: string }).code;
        if (code !== 'EINVAL' && code !== 'ENOENT') throw e;
      }
    },

    /** Detach everything mounted at or below `prefix`, deepest first. Returns what was detached. */
    detachAllUnder(prefix: string): string[] {
      const done: string[] = [];
      for (const m of mountsUnder(prefix)) {
        this.detach(m);
        done.push(m);
      }
      return done;
    },
  };
}

export type Mounts = ReturnType<typeof createMounts>;
