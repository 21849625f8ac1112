/**
 * Helpers for the abuse suite (test/abuse/): a real `forkbox serve` daemon with a client on its socket,
 * host-side views of a sandbox (its PID 1, its cgroup) and waiting for a state with a deadline.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { createDaemonClient, type DaemonClient } from '../../src/transports/daemon-client.ts';
import { sandboxCgroupDir } from './cgroup-files.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from './daemon.ts';
import { makeStateDir, nativeUnavailable } from './native.ts';
import { waitFor as pollUntil } from './wait-for.ts';

export interface AbuseDaemon extends ServedDaemon {
  stateDir: string;
  pid: number;
  api: DaemonClient;
  stop(): Promise<void>;
}

/** A daemon on a fresh state dir, as a child process (`forkbox serve`), and a client on its socket. */
export async function startDaemon(
  opts: { env?: Record<string, string>; args?: string[]; umask?: string; stateDir?: string } = {},
): Promise<AbuseDaemon> {
  const stateDir = opts.stateDir ?? makeStateDir();
  const served = await startServe(stateDir, opts.args ?? [], {
    ...(opts.env ? { env: opts.env } : {}),
    ...(opts.umask ? { umask: opts.umask } : {}),
  });
  const api = createDaemonClient({ socketPath: join(stateDir, 'forkbox.sock') });
  const pid = served.child.pid;
  if (pid === undefined) throw new Error('the daemon has no pid');
  return {
    ...served,
    stateDir,
    pid,
    api,
    async stop() {
      api.close();
      await stopServeAndClean(served.child, stateDir);
    },
  };
}

/**
 * One daemon (startDaemon's) for a whole describe block of an abuse test: started in a `before` hook —
 * which fails, never skips, without the native runtime — and stopped in an `after` hook. Call it inside
 * the describe; its fields are the running daemon's, read in tests or later hooks.
 */
export function abuseDaemon(opts: Parameters<typeof startDaemon>[0] = {}): AbuseDaemon {
  let d: AbuseDaemon | undefined;
  before(async () => {
    const why = nativeUnavailable();
    if (why) throw new Error(`this abuse test needs the native runtime: ${why}`);
    d = await startDaemon(opts);
  });
  after(async () => {
    await d?.stop();
  });
  const started = (): AbuseDaemon => {
    if (!d) throw new Error('the abuse daemon is not running');
    return d;
  };
  return {
    get child() {
      return started().child;
    },
    get url() {
      return started().url;
    },
    log: () => started().log(),
    get stateDir() {
      return started().stateDir;
    },
    get pid() {
      return started().pid;
    },
    get api() {
      return started().api;
    },
    stop: () => started().stop(),
  };
}

/** Host pid of a sandbox's PID 1 (its agent): the process of its `agent` leaf whose NSpid ends in 1. */
export function agentPid(stateDir: string, id: string): number {
  const procs = readFileSync(join(sandboxCgroupDir(stateDir, id, 'freezer'), 'agent', 'cgroup.procs'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map(Number);
  for (const pid of procs) {
    const ns = /^NSpid:\s*(.*)$/m
      .exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
      ?.trim()
      .split(/\s+/);
    if (ns?.[ns.length - 1] === '1') return pid;
  }
  throw new Error(`no PID 1 found in ${id}'s agent cgroup (processes: ${procs.join(', ')})`);
}

export function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/**
 * Poll `fn` until it returns a value other than undefined (which may be falsy); fail naming `what` after
 * `ms`. The shared poll loop of wait-for.ts, in the (what, ms, fn) form these tests read best in.
 */
export async function waitFor<T>(
  what: string,
  ms: number,
  fn: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const boxed = await pollUntil(
    async () => {
      const v = await fn();
      return v === undefined ? undefined : { v };
    },
    { what, timeoutMs: ms, intervalMs: 25 },
  );
  return boxed.v;
}

/** Whether a process exists and is not a zombie. */
export function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2)[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}
