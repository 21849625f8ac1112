/**
 * A real `forkbox serve` child process for integration tests: started on a state dir with a TCP
 * listener on a free loopback port, stopped with SIGTERM, and its state dir emptied (templates outlive
 * the daemon by design) and checked for leftover mounts.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openEngine } from '../../src/composition.ts';
import { mountsUnder } from '../../src/runtimes/native/host/mounts.ts';
import { quietLog } from './native.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServedDaemon {
  child: ChildProcess;
  /** `http://127.0.0.1:<port>` of its TCP listener. */
  url: string;
  log(): string;
}

/** Start `forkbox serve --listen 127.0.0.1:0 …` and resolve once its listener reports its URL. */
export async function startServe(
  stateDir: string,
  extraArgs: string[] = [],
  opts: { env?: Record<string, string>; umask?: string } = {},
): Promise<ServedDaemon> {
  const argv = [
    join(ROOT, 'bin/forkbox.js'),
    '--state-dir',
    stateDir,
    'serve',
    '--listen',
    '127.0.0.1:0',
    ...extraArgs,
  ];
  // Under a given umask: through sh, which sets it and then becomes the daemon (exec).
  const child =
    opts.umask === undefined
      ? spawn(process.execPath, argv, {
          cwd: ROOT,
          stdio: ['ignore', 'ignore', 'pipe'],
          env: { ...process.env, ...opts.env },
        })
      : spawn('/bin/sh', ['-c', `umask ${opts.umask} && exec "$0" "$@"`, process.execPath, ...argv], {
          cwd: ROOT,
          stdio: ['ignore', 'ignore', 'pipe'],
          env: { ...process.env, ...opts.env },
        });
  let log = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`daemon did not listen:\n${log}`)), 30_000);
    child.stderr?.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(log);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on('exit', (code) => reject(new Error(`daemon exited ${code}:\n${log}`)));
  });
  return { child, url, log: () => log };
}

/** SIGTERM the daemon (SIGKILL after 20 s), then kill what it left in the state dir and remove it. */
export async function stopServeAndClean(
  daemon: ChildProcess | undefined,
  stateDir: string | undefined,
): Promise<void> {
  if (daemon && daemon.exitCode === null) {
    const exited = new Promise((r) => daemon.once('exit', r));
    daemon.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000).unref())]);
    if (daemon.exitCode === null && daemon.signalCode === null) {
      daemon.kill('SIGKILL');
      await exited; // it holds the state dir's lock until it is gone
    }
  }
  if (stateDir) {
    const opened = await openEngine({ stateDir, log: quietLog() });
    await opened.close({ killSandboxes: true });
    const left = mountsUnder(stateDir);
    rmSync(stateDir, { recursive: true, force: true });
    assert.deepEqual(left, [], 'nothing left mounted under the state dir');
  }
}
