/** Reading /proc/<pid>/mountinfo: the one parser, for the image store and the native runtime. */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

export interface MountInfo {
  mountId: number;
  parentId: number;
  mountPoint: string;
  fsType: string;
  optional: string;
  /** The mount's own options (field 6: `rw,nosuid,nodev,relatime`, …). */
  options: string;
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
      options: left[5] ?? '',
      optional: left.slice(6).join(' '),
      fsType: right[0] ?? '',
    });
  }
  return out;
}

export function isMountPoint(path: string): boolean {
  return readMountInfo().some((m) => m.mountPoint === path);
}

/** Mount points at or below `dir`, deepest first (the order to unmount them in). */
export function mountsUnder(dir: string): string[] {
  const prefix = resolve(dir);
  const p = prefix.endsWith('/') ? prefix : `${prefix}/`;
  return readMountInfo()
    .map((m) => m.mountPoint)
    .filter((m) => m === prefix || m.startsWith(p))
    .sort((a, b) => b.length - a.length);
}
