/**
 * Small file helpers shared by the v1 and v2 implementations. Every write to a cgroup file goes through
 * `writeCgroupFile`, so every failure names the file, the value, the errno and what to do about it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ErrorCode, ForkboxError } from '../../../domain/errors.ts';
import { DEFAULT_FREEZE_TIMEOUT_MS } from './types.ts';

export { sleep };

const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

/**
 * Validate a group path relative to a hierarchy root. Group names come from sandbox ids; refusing '..',
 * absolute paths and odd characters keeps a hostile or buggy id from reaching outside forkbox's subtree
 * (e.g. writing limits to, or rmdir-ing, someone else's cgroup).
 */
export function checkRel(rel: string): string[] {
  const parts = rel.split('/');
  if (rel.length === 0 || !parts.every((p) => SEGMENT.test(p))) {
    throw new ForkboxError(
      'invalid_argument',
      `invalid cgroup path '${rel}': use names of letters, digits, '.', '_' and '-' separated by '/', without '..' or a leading '/'`,
      { cgroup: rel },
    );
  }
  return parts;
}

function errnoAdvice(code: string | undefined, file: string): { code: ErrorCode; advice: string } {
  switch (code) {
    case 'ENOENT':
      return {
        code: 'not_found',
        advice:
          'the group or this controller file does not exist: create the group first, and check the controller is mounted (v1) or enabled in the parent cgroup.subtree_control (v2)',
      };
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return {
        code: 'permission_denied',
        advice:
          'forkbox must run as root with a writable /sys/fs/cgroup (in a container: --privileged and --cgroupns=host, or a delegated cgroup)',
      };
    case 'ESRCH':
      return { code: 'not_found', advice: 'the process has already exited' };
    case 'EBUSY':
      return {
        code: 'busy',
        advice: file.includes('memory')
          ? 'the group already uses more memory than the new limit: free memory in the sandbox or choose a larger limit'
          : 'the group is in use (it has processes or child groups); retry after they are gone',
      };
    case 'ENOSPC':
      return {
        code: 'internal',
        advice:
          'the kernel refused to attach: on v1 cpuset.cpus/cpuset.mems of the group are empty; on v2 the group has child groups with controllers enabled (processes must live in leaves)',
      };
    case 'EINVAL':
    case 'ERANGE':
      return { code: 'invalid_argument', advice: 'the kernel rejected this value for this file' };
    case 'EOPNOTSUPP':
    case 'ENOTSUP':
      return { code: 'requirement_missing', advice: 'this kernel does not support this cgroup operation' };
    default:
      return { code: 'internal', advice: 'this is unexpected; check dmesg and the cgroup mount' };
  }
}

export function cgroupError(op: string, file: string, e: unknown, value?: string): ForkboxError {
  const err = e as NodeJS.ErrnoException;
  const { code, advice } = errnoAdvice(err.code, file);
  const what = value === undefined ? `${op} ${file}` : `${op} '${value}' to ${file}`;
  return new ForkboxError(
    code,
    `cgroup: ${what} failed: ${err.code ?? err.message}; ${advice}`,
    { path: file, errno: err.code, ...(value === undefined ? {} : { value }) },
    { cause: e },
  );
}

/**
 * Write one value to a cgroup control file. O_WRONLY|O_TRUNC and no O_CREAT: cgroupfs refuses to create
 * files (a missing file must surface as ENOENT = controller missing, not a confusing EACCES), some control
 * files are write-only (opening them for reading fails), and O_TRUNC keeps plain-file fakes in tests exact.
 */
export async function writeCgroupFile(file: string, value: string | number): Promise<void> {
  const text = String(value);
  // Synchronous on purpose: a cgroupfs write takes tens of microseconds in the kernel, while a round trip
  // through libuv's thread pool costs far more, and a create makes dozens of them (bench: 19 ms → <1 ms).
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_TRUNC);
    // One write(2) call: cgroupfs parses each write separately, so a split write would be two values.
    fs.writeSync(fd, text);
  } catch (e) {
    throw cgroupError('writing', file, e, text);
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * Move a process into a group (write its pid to `cgroup.procs`) on libuv's thread pool, not the main
 * thread. On cgroup v1 a migration takes the kernel's threadgroup lock for writing, which first waits for an
 * RCU grace period unless another migration just happened: ~8 ms here, during which the main thread would
 * serve nothing (measured: 7–8 ms for a lone move, 0.05 ms each in a burst). Off the main thread, moves
 * that arrive together share one grace period and the daemon keeps answering meanwhile.
 */
export async function moveToCgroup(procsFile: string, pid: number): Promise<void> {
  const text = String(pid);
  let fh: fs.promises.FileHandle | undefined;
  try {
    fh = await fs.promises.open(procsFile, fs.constants.O_WRONLY | fs.constants.O_TRUNC);
    await fh.write(text);
  } catch (e) {
    throw cgroupError('writing', procsFile, e, text);
  } finally {
    await fh?.close();
  }
}

export async function readCgroupFile(file: string): Promise<string> {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw cgroupError('reading', file, e);
  }
}

/** Read a file that may legitimately be absent (older kernel, controller not present). */
export async function readOptional(file: string): Promise<string | null> {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw cgroupError('reading', file, e);
  }
}

export async function readNumber(file: string): Promise<number> {
  const text = (await readCgroupFile(file)).trim();
  const n = Number(text);
  if (!Number.isFinite(n)) throw cgroupError('parsing', file, new Error(`not a number: '${text}'`));
  return n;
}

/** Parse "key value" lines (memory.stat, cpu.stat, memory.events, cgroup.events, memory.oom_control). */
export function parseKeyed(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v !== undefined && v !== '') out.set(k, Number(v));
  }
  return out;
}

export function fileExists(file: string): boolean {
  return fs.existsSync(file);
}

/** Create a directory; an existing one is fine (create is idempotent). */
export async function mkdirGroup(dir: string): Promise<boolean> {
  try {
    fs.mkdirSync(dir);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw cgroupError('creating', dir, e);
  }
}

/** Direct child group names of a cgroup directory (sub-directories); [] when absent. */
export async function childGroups(dir: string): Promise<string[]> {
  try {
    const entries = fs.readdirSync(dir, { withFileTypes: true });
    return entries
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw cgroupError('listing', dir, e);
  }
}

/** Pids listed in cgroup.procs of `dir` and every descendant group. */
export async function procsRecursive(dir: string, into: Set<number>): Promise<void> {
  const text = await readOptional(path.join(dir, 'cgroup.procs'));
  if (text === null) return; // the group vanished meanwhile
  for (const line of text.split('\n')) {
    const pid = Number(line.trim());
    if (line.trim() !== '' && Number.isInteger(pid) && pid > 0) into.add(pid);
  }
  for (const child of await childGroups(dir)) await procsRecursive(path.join(dir, child), into);
}

/**
 * Remove a group and its descendants, deepest first. rmdir on a cgroup is EBUSY while it still has
 * processes (including ones that are exiting right now), so retry briefly before giving up.
 */
export async function removeGroupTree(dir: string, busyRetryMs = 2_000): Promise<void> {
  for (const child of await childGroups(dir)) await removeGroupTree(path.join(dir, child), busyRetryMs);
  const deadline = Date.now() + busyRetryMs;
  for (;;) {
    try {
      fs.rmdirSync(dir);
      return;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code === 'EBUSY' && Date.now() < deadline) {
        await sleep(5);
        continue;
      }
      const err = cgroupError('removing', dir, e);
      if (code === 'EBUSY') {
        throw new ForkboxError(
          'busy',
          `cgroup: removing ${dir} failed: EBUSY; processes are still in it: kill them first (killAll), then destroy again`,
          { path: dir },
          { cause: e },
        );
      }
      throw err;
    }
  }
}

/** Poll `check` every few ms until it returns true or the deadline passes; returns whether it succeeded. */
export async function pollUntil(
  check: () => Promise<boolean>,
  timeoutMs: number,
  everyMs = 2,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(everyMs);
  }
}

/** SIGKILL a pid, ignoring processes that are already gone. */
export function killPid(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
  }
}

interface KillOps {
  freeze(rel: string, timeoutMs?: number): Promise<void>;
  thaw(rel: string): Promise<void>;
  procs(rel: string): Promise<number[]>;
}

/**
 * SIGKILL a group's processes with the group frozen, so nothing can fork between listing the pids and
 * killing them. If the freeze itself times out (stuck FREEZING), killing is still the right thing to do:
 * it goes on without it. Frozen tasks act on SIGKILL only once thawed.
 */
export async function freezeAndKill(ops: KillOps, rel: string, timeoutMs: number): Promise<void> {
  let frozen = true;
  await ops.freeze(rel, Math.min(timeoutMs / 2, DEFAULT_FREEZE_TIMEOUT_MS)).catch(() => {
    frozen = false;
  });
  for (const pid of await ops.procs(rel)) killPid(pid);
  if (frozen) await ops.thaw(rel);
}

/** SIGKILL what is left in a group (forked in a gap) until it is empty; a timeout error past `deadline`. */
export async function killUntilEmpty(
  kind: 'v1' | 'v2',
  procs: (rel: string) => Promise<number[]>,
  rel: string,
  opts: { deadline: number; timeoutMs: number; everyMs: number },
): Promise<void> {
  const empty = await pollUntil(
    async () => {
      const left = await procs(rel);
      for (const pid of left) killPid(pid);
      return left.length === 0;
    },
    Math.max(0, opts.deadline - Date.now()),
    opts.everyMs,
  );
  if (!empty) {
    const left = await procs(rel);
    throw new ForkboxError(
      'timeout',
      `cgroup ${kind}: processes ${left.join(', ')} in '${rel}' survived SIGKILL for ${opts.timeoutMs} ms (stuck in uninterruptible I/O?); check 'cat /proc/<pid>/stack' and retry`,
      { cgroup: rel, pids: left },
    );
  }
}

export function isUnlimited(n: number): boolean {
  return !Number.isFinite(n) || n <= 0;
}
