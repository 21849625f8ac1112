/** Host-side mount helpers for the native runtime (mount(2) through koffi: no mount(8) process per call). */
import { chmodSync, mkdirSync } from 'node:fs';
import { ForkboxError } from '../../../domain/errors.ts';
import { isMountPoint, mountsUnder } from '../../../util/mountinfo.ts';
import { type IdmappedTree, openIdmappedTree } from './idmap.ts';
import { MNT_DETACH, MS, type Sys } from './sys.ts';

export { isMountPoint, type MountInfo, mountsUnder, readMountInfo } from '../../../util/mountinfo.ts';

/** A lower layer of an overlay, and the idmap (an nsfs descriptor, host/userns-maker.ts) it is seen through. */
export interface OverlayLower {
  path: string;
  idmap?: number | undefined;
}

/** An overlay's upper and work dirs, both under `root` (one mount: overlayfs renames between them). */
export interface OverlayUpper {
  root: string;
  /** Relative to `root`. */
  upper: string;
  work: string;
  idmap?: number | undefined;
}

/** The one-page limit of mount(2)'s options. */
function checkOptions(target: string, data: string, layers: number): void {
  if (data.length > 4000)
    throw new ForkboxError(
      'resource_exhausted',
      `the overlay mount options for ${target} are ${data.length} bytes, over the kernel's one-page limit (${layers} layers). Use a state dir with a shorter path (--state-dir).`,
      { layers, bytes: data.length },
    );
}

export interface Mounts {
  /** Makes `dir` (created if missing, 0755) a bind mount of itself with shared propagation. */
  sharedSelfBind(dir: string): void;
  /** Bind-mounts `source` at `target`. */
  bind(source: string, target: string): void;
  /** Mounts a nosuid, nodev overlay at `target`, each layer through its idmap when it has one. */
  overlay(
    target: string,
    lowers: (string | OverlayLower)[],
    upper: string | OverlayUpper,
    work?: string,
  ): void;
  /** Lazy unmount; a path that is not mounted (EINVAL) or gone (ENOENT) is not an error. */
  detach(target: string): void;
  /** Detaches everything mounted at or below `prefix`, deepest first; returns what was detached. */
  detachAllUnder(prefix: string): string[];
}

export function createMounts(sys: Sys): Mounts {
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

    /**
     * Mount an overlay at `target`: nosuid and nodev (nothing it holds may raise privileges or reach a
     * device, whoever looks at it), each layer through its idmap when it has one. Absolute layer paths are
     * short (<state>/layers/<12 hex>) and idmapped ones shorter (/proc/self/fd/N), so ~80 layers fit in the
     * one page the mount options allow (a fork adds one layer; pid namespaces cap forks of forks at ~30).
     */
    overlay(
      target: string,
      lowers: (string | OverlayLower)[],
      upper: string | OverlayUpper,
      work?: string,
    ): void {
      const trees: IdmappedTree[] = [];
      const via = (path: string, idmap: number | undefined, writable: boolean): string => {
        if (idmap === undefined) return path;
        const t = openIdmappedTree(path, { fd: idmap }, { writable });
        trees.push(t);
        return t.path;
      };
      try {
        const low = lowers.map((l) => (typeof l === 'string' ? l : via(l.path, l.idmap, false)));
        let up: string;
        let wk: string;
        if (typeof upper === 'string') {
          up = upper;
          wk = work ?? '';
        } else {
          const root = via(upper.root, upper.idmap, true);
          up = `${root}/${upper.upper}`;
          wk = `${root}/${upper.work}`;
        }
        const data = `lowerdir=${low.join(':')},upperdir=${up},workdir=${wk}`;
        checkOptions(target, data, low.length);
        sys.mount('overlay', target, 'overlay', MS.NOSUID | MS.NODEV, data);
      } finally {
        for (const t of trees) t.close();
      }
    },

    detach(target: string): void {
      try {
        sys.umount2(target, MNT_DETACH);
      } catch (e) {
        const code = (e as { code?: string }).code;
        if (code !== 'EINVAL' && code !== 'ENOENT') throw e;
      }
    },

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
