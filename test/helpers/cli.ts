/**
 * The real CLI against a real daemon, for integration tests: `bin/forkbox.js` run as a child process on
 * a state dir whose daemon (`forkbox serve`, test/helpers/daemon.ts) is running. Every call is bounded
 * (a stuck CLI fails the test), and failures show the command, its exit code and its stderr.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, type SpawnSyncReturns, spawn, spawnSync } from 'node:child_process';
import { constants } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './daemon.ts';
import { waitFor as pollUntil } from './wait-for.ts';

export const BIN = join(ROOT, 'bin/forkbox.js');
/** Longest a single CLI call may take before it counts as stuck (fork/snapshot under load included). */
const CALL_TIMEOUT_MS = 120_000;

export interface Cli {
  /** `forkbox --state-dir DIR args...`, finished. */
  run(args: string[], opts?: { input?: string; cwd?: string }): SpawnSyncReturns<string>;
  /** Its stdout; fails the test unless it exited 0. */
  ok(...args: string[]): string;
  /** `--json` output, parsed; fails the test unless it exited 0. */
  json<T>(...args: string[]): T;
  /** Fails the test unless it exited `code`; returns stderr. */
  fails(code: number, ...args: string[]): string;
  /** Started, not awaited: for signals. */
  start(args: string[]): ChildProcess;
}

export function cliFor(stateDir: string): Cli {
  const argv = (args: string[]) => [BIN, '--state-dir', stateDir, ...args];
  const run = (args: string[], opts: { input?: string; cwd?: string } = {}) =>
    spawnSync(process.execPath, argv(args), {
      encoding: 'utf8',
      ...(opts.cwd === undefined ? {} : { cwd: opts.cwd }),
      timeout: CALL_TIMEOUT_MS,
      // A diff of tens of thousands of paths is megabytes of JSON (spawnSync's default is 1 MiB).
      maxBuffer: 64 * 1024 * 1024,
      input: opts.input ?? '',
      env: { ...process.env, FORKBOX_URL: '' },
    });
  const ok = (...args: string[]) => {
    const r = run(args);
    assert.equal(r.status, 0, `forkbox ${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr}`);
    return r.stdout;
  };
  return {
    run,
    ok,
    json: <T>(...args: string[]) => JSON.parse(ok('--json', ...args)) as T,
    fails(code, ...args) {
      const r = run(args);
      assert.equal(
        r.status,
        code,
        `forkbox ${args.join(' ')}: expected exit ${code}, got ${r.status ?? r.signal}: ${r.stdout}${r.stderr}`,
      );
      return r.stderr;
    },
    start: (args) =>
      spawn(process.execPath, argv(args), {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, FORKBOX_URL: '' },
      }),
  };
}

/**
 * Poll `probe` until it returns a value that is not undefined; fail the test after `ms`. The shared poll
 * loop of wait-for.ts, in the form these tests read best in.
 */
export async function waitFor<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  what: string | (() => string),
  ms = 30_000,
): Promise<T> {
  const boxed = await pollUntil(
    async () => {
      const v = await probe();
      return v === undefined ? undefined : { v };
    },
    { what: typeof what === 'string' ? what : 'the condition', timeoutMs: ms, intervalMs: 200 },
  ).catch((e: unknown) => {
    // A `what` function says what was seen last, so it is asked only once the wait has failed.
    if (typeof what === 'string') throw e;
    throw new Error(`timed out after ${ms} ms waiting for ${what()}`, { cause: e });
  });
  return boxed.v;
}

/** The exit code of a started CLI (128+n when a signal ended it); fails the test after `ms`. */
export function exitOf(child: ChildProcess, ms = 60_000): Promise<number> {
  return new Promise((resolve, reject) => {
    const done = (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      resolve(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0));
    };
    const timer = setTimeout(() => {
      child.off('exit', done);
      child.kill('SIGKILL');
      reject(new Error(`the CLI (pid ${child.pid}) did not exit within ${ms} ms`));
    }, ms);
    if (child.exitCode !== null || child.signalCode !== null) done(child.exitCode, child.signalCode);
    else child.once('exit', done);
  });
}

/**
 * The processes in sandbox `id` other than its own machinery (the agent, pid 1, and its command
 * spawner, named `forkbox-spawner`) and the listing itself, as "PID COMM" lines, read through another
 * exec from the sandbox's own /proc.
 */
export function sandboxProcesses(cli: Cli, id: string): string[] {
  const script =
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion
    'for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = 1 ] || [ "$p" = $$ ] || echo "$p $(cat $d/comm 2>/dev/null)"; done';
  return cli
    .ok('exec', id, '--', 'sh', '-c', script)
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.endsWith(' forkbox-spawner'));
}

/** Host processes whose cgroup (any hierarchy, v1 or v2) is the sandbox's or under it. */
export function hostProcessesOf(id: string): number[] {
  const r = spawnSync('sh', ['-c', `grep -l -- '/${id}\\(/\\|$\\)' /proc/[0-9]*/cgroup 2>/dev/null`], {
    encoding: 'utf8',
  });
  return r.stdout
    .split('\n')
    .map((l) => Number(/^\/proc\/(\d+)\/cgroup$/.exec(l)?.[1]))
    .filter((n) => Number.isInteger(n) && n > 0);
}
