/**
 * One real `forkbox serve` for a whole describe block: started on a fresh state dir in a `before` hook,
 * stopped (and its state dir checked and removed) in an `after` hook. Call it inside the describe; read
 * its fields in tests or later hooks, once the daemon runs.
 */
import { after, before } from 'node:test';
import { type Cli, cliFor } from './cli.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from './daemon.ts';
import { makeStateDir } from './native.ts';

export interface ServedSuite {
  readonly stateDir: string;
  readonly daemon: ServedDaemon;
  /** The daemon's MCP endpoint over Streamable HTTP (`<url>/mcp`). */
  readonly mcpUrl: string;
  /** The CLI on the daemon's state dir (usable before the daemon starts: each call reads the dir then). */
  readonly cli: Cli;
}

export function servedSuite(): ServedSuite {
  let stateDir: string | undefined;
  let daemon: ServedDaemon | undefined;
  before(async () => {
    stateDir = makeStateDir();
    daemon = await startServe(stateDir);
  });
  after(async () => {
    await stopServeAndClean(daemon?.child, stateDir);
  });
  const started = (): { stateDir: string; daemon: ServedDaemon } => {
    if (stateDir === undefined || daemon === undefined) throw new Error('the suite daemon is not running');
    return { stateDir, daemon };
  };
  return {
    get stateDir() {
      return started().stateDir;
    },
    get daemon() {
      return started().daemon;
    },
    get mcpUrl() {
      return `${started().daemon.url}/mcp`;
    },
    cli: {
      run: (args, opts) => cliFor(started().stateDir).run(args, opts),
      ok: (...args) => cliFor(started().stateDir).ok(...args),
      json: (...args) => cliFor(started().stateDir).json(...args),
      fails: (code, ...args) => cliFor(started().stateDir).fails(code, ...args),
      start: (args) => cliFor(started().stateDir).start(args),
    },
  };
}
