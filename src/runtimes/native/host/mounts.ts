/** Host-side mount helpers for the native runtime (mount(2) through koffi: no mount(8) process per call). */
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { MNT_DETACH, MS, type Sys } from './sys.ts';

export interface MountInfo {
  mountId: number;
  parentId: number;
  mountPoint: string;
  fsType: string;
  optional: string;
}

/** Decode the octal escapes mountinfo uses for space, tab, newline and backslash. */
function unescapeMountPath(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
}

export function readMountInfo(pid: number | 'self' = 'self'): MountInfo[] {
  const out: MountInfo[] = [];
  for (const line of readFileSync(`/proc/${pid}/mountinfo`, 'utf8').split('\n')) {
    if (!line) continue;
    const sep = line.indexOf(' - ');
    const left = line.slice(0, sep).split(' ');
    const right = line.slice(sep + 3).split(' ');
    out.push({
      mountId: Number(left[0]),
      parentId: Number(left[1]),
      mountPoint: unescapeMountPath(left[4] ?? ''),
      optional: left.slice(6).join(' '),
      fsType: right[0] ?? '',
    });
  }
  return out;
}

export function isMountPoint(path: string): boolean {
  return readMountInfo().some((m) => m.mountPoint === path);
}

/** Mount points at or below `prefix`, deepest first (the order to unmount them in). */
export function mountsUnder(prefix: string): string[] {
  const p = prefix.endsWith('/') ? prefix : `${prefix}/`;
  return readMountInfo()
    .map((m) => m.mountPoint)
    .filter((m) => m === prefix || m.startsWith(p))
    .sort((a, b) => b.length - a.length);
}

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
      // the legacy mount options allow; deeper chains are squashed before they get there.
      const data = `lowerdir=${lowers.join(':')},upperdir=${upper},workdir=${work}`;
      if (data.length > 4000) {
        throw new Error(
          `overlay options for ${target} are ${data.length} bytes, over the one-page limit; squash the layer chain`,
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
