/**
 * A real `forkbox serve` for a describe block that kills it with SIGKILL and restarts it on the same state
 * dir (the crash tests of test/abuse/), with a client on its HTTP listener that follows the restarts.
 * Started in a `before` hook, stopped and its state dir checked and removed in an `after` hook.
 */
import { after, before } from 'node:test';
import { createDaemonClient, type DaemonClient } from '../../src/transports/daemon-client.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from './daemon.ts';
import { makeStateDir } from './native.ts';

export interface KillableDaemon {
  readonly stateDir: string;
  /** A client of the daemon running now (a new one after each restart). */
  readonly api: DaemonClient;
  /** SIGKILL the daemon and wait until it is gone: no shutdown of any kind. */
  kill(): Promise<void>;
  /**
   * Close the old client, start the daemon again on the same state dir (with `args` in place of the
   * first start's `forkbox serve` arguments, when given), and connect to it.
   */
  restart(args?: string[]): Promise<void>;
}

/** `args`: extra `forkbox serve` arguments (e.g. `--pool 2`). */
export function killableDaemon(args: string[] = []): KillableDaemon {
  let stateDir = '';
  let daemon: ServedDaemon | undefined;
  let api: DaemonClient | undefined;
  const start = async (serveArgs = args) => {
    daemon = await startServe(stateDir, serveArgs);
    api = createDaemonClient({ url: daemon.url });
  };
  before(async () => {
    stateDir = makeStateDir();
    await start();
  });
  after(async () => {
    api?.close();
    await stopServeAndClean(daemon?.child, stateDir);
  });
  return {
    get stateDir() {
      return stateDir;
    },
    get api() {
      if (!api) throw new Error('the daemon has not started');
      return api;
    },
    async kill() {
      const old = daemon?.child;
      old?.kill('SIGKILL');
      await new Promise((r) => old?.once('exit', r));
    },
    async restart(serveArgs) {
      api?.close();
      await start(serveArgs);
    },
  };
}
