/**
 * Shared pieces of the abuse suite (test/abuse/): attacks run from inside real sandboxes, both as an
 * `exec` command and as Python in the REPL (whose worker keeps CAP_SYS_ADMIN in the sandbox's user
 * namespace), host-side markers an attack must never reach, and host process lookups.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type Controller, cgroupVersion, controllerDir, procsRecursive } from './cgroup-files.ts';
import { waitFor as pollUntil } from './wait-for.ts';

/** A random token for names that must not collide with anything on the host or in other tests. */
export function token(prefix = 'fbx'): string {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/**
 * Poll `check` until it returns a truthy value; fail with `what` (and the last value) at the deadline. The
 * shared poll loop of wait-for.ts, in the (what, check) form these tests read best in.
 */
export function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  deadlineMs = 20_000,
  everyMs = 100,
): Promise<Truthy<T>> {
  return pollUntil(check, { what, timeoutMs: deadlineMs, intervalMs: everyMs }) as Promise<Truthy<T>>;
}

/**
 * A file on the host, under /var/tmp in a fresh directory with a random name, holding a random
 * secret padded to an unusual size (`MARKER_SIZE`), beside an empty file with a random name
 * (`sentinel`) that no attack ever names. `leaked(x)` says whether `x` (a result or an error message)
 * shows the secret, the sentinel's name or the marker's size; `untouched()` whether the marker's content
 * and mtime are exactly as written and nothing was added beside them.
 */
export interface HostMarker {
  dir: string;
  path: string;
  secret: string;
  sentinel: string;
  untouched(): boolean;
  leaked(value: unknown): boolean;
  /** Names in `dir` now. */
  entries(): string[];
  remove(): void;
}

export const MARKER_SIZE = 5003;

export function hostMarker(): HostMarker {
  mkdirSync('/var/tmp', { recursive: true });
  const dir = mkdtempSync('/var/tmp/forkbox-abuse-');
  const path = join(dir, 'marker');
  const secret = token('HOST-SECRET');
  const sentinel = token('host-only');
  writeFileSync(path, secret.padEnd(MARKER_SIZE, '.'), { mode: 0o644 });
  writeFileSync(join(dir, sentinel), '');
  const { mtimeMs } = statSync(path);
  const entries = () => readdirSync(dir).sort();
  const expected = JSON.stringify(['marker', sentinel].sort());
  return {
    dir,
    path,
    secret,
    sentinel,
    untouched: () => {
      try {
        return (
          readFileSync(path, 'utf8') === secret.padEnd(MARKER_SIZE, '.') &&
          statSync(path).mtimeMs === mtimeMs &&
          JSON.stringify(entries()) === expected
        );
      } catch {
        return false;
      }
    },
    leaked: (value) => {
      const s = typeof value === 'string' ? value : JSON.stringify(value ?? null);
      return s.includes(secret) || s.includes(sentinel) || new RegExp(`"size":${MARKER_SIZE}\\b`).test(s);
    },
    entries,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Host pids whose command line contains `needle` (forked children keep their parent's command line). */
export function hostPidsWith(needle: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(needle)) out.push(Number(name));
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

/** The cgroup directory holding `controller`'s files that a host process is in (v1 or v2). */
export function cgroupDirOf(pid: number, controller: Controller): string | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
  } catch {
    return null;
  }
  if (cgroupVersion() === 'v2') {
    const unified = /^0::(.*)$/m.exec(text)?.[1];
    return unified ? controllerDir(controller, unified) : null;
  }
  for (const line of text.trim().split('\n')) {
    const [, ctrls, rel] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (rel === undefined || ctrls === undefined) continue;
    if (ctrls.split(',').includes(controller)) return controllerDir(controller, rel);
  }
  return null;
}

/**
 * Host pids of every process in sandbox `id`'s cgroup, found from one of its processes (`pid`): the
 * ancestor group named after the sandbox (whatever leaves exist below it), read recursively.
 */
export function sandboxHostPids(pid: number, id: string, controller: Controller = 'pids'): number[] {
  const leaf = cgroupDirOf(pid, controller);
  assert.ok(leaf, `host pid ${pid} has no ${controller} cgroup`);
  let dir = leaf;
  while (basename(dir) !== id && dirname(dir) !== dir) dir = dirname(dir);
  return procsRecursive(basename(dir) === id ? dir : leaf);
}

/**
 * Python that prints one JSON line: the attack's findings. The same source runs as an `exec`
 * command (`python3 -c`) and in the REPL, so each attack is tried with both privilege levels.
 */
export interface BothResults<T> {
  exec: T;
  repl: T;
}

/** The last line of `stdout`, parsed as JSON (the convention of every attack script here). */
export function lastJson<T>(stdout: string, where: string): T {
  const line = stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as T;
  } catch {
    return assert.fail(`${where} printed no JSON line:\n${stdout.slice(-2000)}`);
  }
}

/** Run `code` as `python3 -c` in an exec, with `args` as sys.argv[1:]. */
export async function execPython<T>(
  api: ForkboxApi,
  id: string,
  code: string,
  args: string[] = [],
  timeoutSeconds = 60,
): Promise<T> {
  const r = await api.exec(id, { argv: ['python3', '-c', code, ...args], timeoutSeconds });
  assert.equal(r.exitCode, 0, `exec python failed: ${r.stderr.slice(-2000)}`);
  return lastJson<T>(r.stdout, 'exec');
}

/** Run `code` in the sandbox's REPL (sys.argv is set to ['-c', ...args] first). */
export async function replPython<T>(
  api: ForkboxApi,
  id: string,
  code: string,
  args: string[] = [],
  timeoutSeconds = 60,
): Promise<T> {
  const prelude = `import sys\nsys.argv = ${JSON.stringify(['-c', ...args])}\n`;
  const r = await api.runCode(id, { code: prelude + code, timeoutSeconds });
  assert.equal(r.ok, true, `REPL code failed: ${JSON.stringify(r.error)}\n${r.stderr.slice(-2000)}`);
  return lastJson<T>(r.stdout, 'REPL');
}

/** Both: as an exec command and in the REPL. */
export async function bothPython<T>(
  api: ForkboxApi,
  id: string,
  code: string,
  args: string[] = [],
): Promise<BothResults<T>> {
  return {
    exec: await execPython<T>(api, id, code, args),
    repl: await replPython<T>(api, id, code, args),
  };
}

/** Python prelude: `call(nr, *args)` through libc's syscall(), returning "ok:<r>" or the errno name. */
export const PY_SYSCALL = `
import ctypes, errno, json, os, sys
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
def call(nr, *args):
    ctypes.set_errno(0)
    r = _libc.syscall(ctypes.c_long(nr), *[a if isinstance(a, (bytes, ctypes.Array)) else ctypes.c_long(a) for a in args])
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno())) if r == -1 else "ok:%d" % r
def libc_call(name, *args):
    ctypes.set_errno(0)
    r = getattr(_libc, name)(*args)
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno())) if r == -1 else "ok"
`;

/** Capability bit numbers (linux/capability.h). */
export const CAP = {
  CHOWN: 0,
  DAC_OVERRIDE: 1,
  DAC_READ_SEARCH: 2,
  SETUID: 7,
  NET_ADMIN: 12,
  NET_RAW: 13,
  SYS_CHROOT: 18,
  SYS_PTRACE: 19,
  SYS_ADMIN: 21,
  MKNOD: 27,
  SETFCAP: 31,
} as const;

export const hasCap = (mask: bigint, cap: number): boolean => (mask & (1n << BigInt(cap))) !== 0n;

/** A `CapXxx:` line of /proc/<pid>/status text as a bit mask. */
export function capMask(status: string, which: 'CapBnd' | 'CapEff' | 'CapPrm' | 'CapAmb' | 'CapInh'): bigint {
  const hex = new RegExp(`^${which}:\\s*([0-9a-f]+)`, 'm').exec(status)?.[1];
  assert.ok(hex, `no ${which} line in ${status.slice(0, 300)}`);
  return BigInt(`0x${hex}`);
}

/**
 * The start of a Python probe run as a host user: `attempt(name, fn)` records "ok:<what fn returned>" or
 * the errno's name in `out`, which the probe prints as JSON at its end.
 */
export const PROBE_PRELUDE = `
import errno, json, os, socket, subprocess, sys
out = {}
def attempt(name, fn):
    try:
        out[name] = "ok:" + str(fn())[:200]
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
`;
