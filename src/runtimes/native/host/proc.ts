/** Reading /proc on the host. */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';

export interface ProcStatus {
  ppid: number;
  /** NSpid: this process's pid in each nested pid namespace, outermost (host) first. */
  nsPids: number[];
  uid: number;
}

export function readProcStatus(pid: number): ProcStatus | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  let ppid = 0;
  let nsPids: number[] = [];
  let uid = -1;
  for (const line of text.split('\n')) {
    if (line.startsWith('PPid:')) ppid = Number(line.slice(5).trim());
    else if (line.startsWith('NSpid:')) nsPids = line.slice(6).trim().split(/\s+/).map(Number);
    else if (line.startsWith('Uid:')) uid = Number(line.slice(4).trim().split(/\s+/)[0]);
  }
  return { ppid, nsPids, uid };
}

/** Start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat): tells pid reuse apart. */
export function procStartTime(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(rest[19]);
  } catch {
    return undefined;
  }
}

export function isAlive(pid: number, startTime?: number): boolean {
  const st = procStartTime(pid);
  if (st === undefined) return false;
  return startTime === undefined || st === startTime;
}

/** State letter of a process (field 3 of /proc/<pid>/stat: R, S, D, T, Z, X, …), or undefined when gone. */
export function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

/** PF_EXITING (include/linux/sched.h): the process is in do_exit (a pid namespace's init stays so while any
 * process of its namespace has not exited, e.g. a frozen one). */
const PF_EXITING = 0x4;
/** SIGKILL's bit in /proc/<pid>/status's pending-signal masks. */
const SIGKILL_BIT = 1n << 8n;

/**
 * Whether `pid` is dead or on its way out: gone, a zombie, exiting (its code has run its course: a pid
 * namespace's init stays in exit while a frozen process of its namespace has not died), or holding a
 * pending SIGKILL (a frozen process receives it only when thawed).
 */
export function isDying(pid: number, startTime?: number): boolean {
  if (!isRunning(pid, startTime)) return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const flags = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[6]);
    if ((flags & PF_EXITING) !== 0) return true;
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    for (const m of status.matchAll(/^(?:SigPnd|ShdPnd):\s*([0-9a-f]+)$/gm))
      if ((BigInt(`0x${m[1]}`) & SIGKILL_BIT) !== 0n) return true;
    return false;
  } catch {
    return true; // it went while we looked
  }
}

/**
 * Whether `pid` (started at `startTime`, when given) still runs: alive and not a zombie. A sandbox's PID 1
 * that died stays a zombie until its parent (its template's or parent sandbox's agent) reaps it, and a
 * frozen parent never does.
 */
export function isRunning(pid: number, startTime?: number): boolean {
  if (!isAlive(pid, startTime)) return false;
  const s = procState(pid);
  return s !== undefined && s !== 'Z' && s !== 'X';
}

/** Host pids of the children of every thread of `pid` (/proc/<pid>/task/<tid>/children). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) {
    try {
      for (const c of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' '))
        if (c.trim() !== '') out.push(Number(c));
    } catch {
      // the thread ended
    }
  }
  return out;
}

/**
 * Set a process's oom_score_adj. Lowering it needs CAP_SYS_RESOURCE, which some hosts withhold even
 * from root (containers, CI sandboxes): then this returns false and the OOM killer simply ranks the
 * agent by its (small) size. `forkbox doctor` reports it.
 */
export function setOomScoreAdj(pid: number, value: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/oom_score_adj`, String(value));
    return true;
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === 'EACCES' || code === 'EPERM') return false;
    throw e;
  }
}

/** Whether this process holds CAP_SYS_RESOURCE (needed to protect agents from the OOM killer). */
export function hasCapSysResource(): boolean {
  const m = /^CapEff:\s*([0-9a-f]+)/m.exec(readFileSync('/proc/self/status', 'utf8'));
  return m?.[1] !== undefined && (BigInt(`0x${m[1]}`) & (1n << 24n)) !== 0n;
}

export function bootId(): string {
  return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
}
