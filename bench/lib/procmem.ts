/**
 * Memory of a group of processes from /proc/<pid>/smaps_rollup: USS (pages only these processes map:
 * Private_Clean + Private_Dirty), PSS (shared pages divided among their sharers) and RSS (every resident
 * page, shared ones counted in full — what `ps` shows, and misleading for forked sandboxes).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';

export interface MemFigures {
  ussKb: number;
  pssKb: number;
  rssKb: number;
  procs: number;
}

const CGROUP_ROOT = process.env.FORKBOX_CGROUP_ROOT ?? '/sys/fs/cgroup';

/**
 * Pids in a cgroup and all its descendants (v1 pids hierarchy, or the unified one when that is all there
 * is): a sandbox's processes may sit in leaves under its group (agent / repl / work).
 */
/**
 * A sandbox's cgroup (relative to the controllers' roots): `forkbox/<state-id>/sandboxes/<id>`, found by
 * its id (ids are unique across state dirs), or the pre-state-id `forkbox/sandboxes/<id>`.
 */
export function sandboxCgroup(id: string): string {
  for (const base of [`${CGROUP_ROOT}/pids`, CGROUP_ROOT]) {
    let scopes: string[] = [];
    try {
      scopes = readdirSync(`${base}/forkbox`);
    } catch {
      continue;
    }
    for (const s of scopes)
      if (existsSync(`${base}/forkbox/${s}/sandboxes/${id}`)) return `forkbox/${s}/sandboxes/${id}`;
  }
  return `forkbox/sandboxes/${id}`;
}

export function cgroupPids(rel: string): number[] {
  for (const base of [`${CGROUP_ROOT}/pids`, CGROUP_ROOT]) {
    const dir = `${base}/${rel}`;
    if (existsSync(`${dir}/cgroup.procs`)) return pidsUnder(dir);
  }
  throw new Error(`no cgroup.procs for cgroup ${rel} under ${CGROUP_ROOT}`);
}

function pidsUnder(dir: string): number[] {
  const pids = readFileSync(`${dir}/cgroup.procs`, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map(Number);
  for (const e of readdirSync(dir, { withFileTypes: true }))
    if (e.isDirectory()) pids.push(...pidsUnder(`${dir}/${e.name}`));
  return pids;
}

function rollup(pid: number): Record<string, number> | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  } catch {
    return null; // exited meanwhile
  }
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^(\w+):\s+(\d+) kB/.exec(line);
    if (m?.[1] && m[2]) out[m[1]] = Number(m[2]);
  }
  return out;
}

export function processesMemory(pids: number[]): MemFigures {
  const f: MemFigures = { ussKb: 0, pssKb: 0, rssKb: 0, procs: 0 };
  for (const pid of pids) {
    const r = rollup(pid);
    if (!r) continue;
    f.procs++;
    f.ussKb += (r.Private_Clean ?? 0) + (r.Private_Dirty ?? 0);
    f.pssKb += r.Pss ?? 0;
    f.rssKb += r.Rss ?? 0;
  }
  return f;
}

/** The pids cgroup (relative to the hierarchy root) a process is in. */
export function pidsCgroupOf(pid: number): string | null {
  const text = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
  for (const line of text.split('\n')) {
    const [, ctl, path] = line.split(':');
    if (ctl === 'pids' && path) return path.replace(/^\//, '');
  }
  for (const line of text.split('\n')) if (line.startsWith('0::')) return line.slice(4);
  return null;
}

export function parentPid(pid: number): number | null {
  try {
    const m = /^PPid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m?.[1] ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** memory.usage_in_bytes of a v1 memory cgroup (or memory.current on v2), or null. */
export function cgroupMemoryBytes(rel: string): number | null {
  for (const p of [
    `${CGROUP_ROOT}/memory/${rel}/memory.usage_in_bytes`,
    `${CGROUP_ROOT}/${rel}/memory.current`,
  ]) {
    try {
      return Number(readFileSync(p, 'utf8').trim());
    } catch {
      // next layout
    }
  }
  return null;
}
