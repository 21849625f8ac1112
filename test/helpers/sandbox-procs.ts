/**
 * What a sandbox's processes hold, read from the host: which processes belong to a sandbox (by the
 * sandbox's cgroup, whatever the cgroup version), their open fds and the mounts of their own view.
 */
import { lstatSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Host pids of every process in sandbox `id` (not of its child sandboxes, which have cgroups of their own). */
export function sandboxPids(id: string): number[] {
  const mark = `/sandboxes/${id}`;
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let text: string;
    try {
      text = readFileSync(`/proc/${name}/cgroup`, 'utf8');
    } catch {
      continue; // ended while we looked
    }
    const inIt = text.split('\n').some((line) => {
      const i = line.indexOf(mark);
      return i >= 0 && (line.length === i + mark.length || line[i + mark.length] === '/');
    });
    if (inIt) out.push(Number(name));
  }
  return out.sort((a, b) => a - b);
}

/** The sandbox's PID 1 among `pids`: the one whose NSpid ends in 1. */
export function initOf(pids: number[]): number {
  for (const pid of pids) {
    const m = /^NSpid:\s+(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    if (m?.[1]?.trim().split(/\s+/).at(-1) === '1') return pid;
  }
  throw new Error(`no PID 1 among ${pids.join(', ')}`);
}

export interface FdInfo {
  pid: number;
  fd: number;
  /** readlink of /proc/<pid>/fd/<fd>. */
  target: string;
  /** Mount id the fd was opened through (fdinfo `mnt_id`). */
  mntId: number;
  /** st_dev of the open file, as "major:minor". */
  dev: string;
}

const anonymous = (t: string) =>
  t.startsWith('pipe:') || t.startsWith('socket:') || t.startsWith('anon_inode:') || t.startsWith('/memfd:');

export function isAnonymous(f: FdInfo): boolean {
  return anonymous(f.target);
}

function devString(dev: bigint): string {
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn);
  const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn);
  return `${major}:${minor}`;
}

export function openFds(pid: number): FdInfo[] {
  const out: FdInfo[] = [];
  for (const name of readdirSync(`/proc/${pid}/fd`)) {
    const path = join(`/proc/${pid}/fd`, name);
    try {
      const target = readlinkSync(path);
      const info = readFileSync(`/proc/${pid}/fdinfo/${name}`, 'utf8');
      const mntId = Number(/^mnt_id:\s+(\d+)/m.exec(info)?.[1] ?? -1);
      out.push({
        pid,
        fd: Number(name),
        target,
        mntId,
        dev: devString(statSync(path, { bigint: true }).dev),
      });
    } catch {
      // closed while we looked
    }
  }
  return out;
}

/** Mount ids and devices ("major:minor") of the mounts in `pid`'s own view, and which ids are overlays. */
export function mountsOf(pid: number): { ids: Set<number>; devs: Set<string>; overlays: Set<number> } {
  const ids = new Set<number>();
  const devs = new Set<string>();
  const overlays = new Set<number>();
  for (const line of readFileSync(`/proc/${pid}/mountinfo`, 'utf8').split('\n')) {
    const f = line.split(' ');
    if (f.length < 3) continue;
    ids.add(Number(f[0]));
    devs.add(f[2] ?? '');
    const sep = f.indexOf('-');
    if (sep > 0 && f[sep + 1] === 'overlay') overlays.add(Number(f[0]));
  }
  return { ids, devs, overlays };
}

/** Inodes of the sockets and pipes `pids` hold ("socket:[123]" → "socket:123"). */
export function channelInodes(pids: number[]): Set<string> {
  const out = new Set<string>();
  for (const pid of pids) {
    for (const f of openFds(pid)) {
      const m = /^(socket|pipe):\[(\d+)\]$/.exec(f.target);
      if (m) out.add(`${m[1]}:${m[2]}`);
    }
  }
  return out;
}

/**
 * Size and mtime of every file under `root` on the same filesystem, skipping `skip` (relative names of
 * top-level entries): a fingerprint to compare before and after an attack.
 */
export function fileFingerprints(root: string, skip: string[]): Map<string, string> {
  const out = new Map<string, string>();
  const rootDev = lstatSync(root).dev;
  const walk = (dir: string, top: boolean): void => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (top && skip.includes(name)) continue;
      const p = join(dir, name);
      let st: ReturnType<typeof lstatSync>;
      try {
        st = lstatSync(p);
      } catch {
        continue;
      }
      if (st.dev !== rootDev) continue; // a mount point (a template's root, a tmpfs): not the host's files
      if (st.isDirectory()) walk(p, false);
      else if (st.isFile()) out.set(p, `${st.size}:${st.mtimeMs}`);
    }
  };
  walk(root, true);
  return out;
}
