/**
 * What the registry pull suites share (images-pull, images-run-config, images-pull-index-auth): `forkbox
 * --state-dir … ARGS` against their daemon, awaited without blocking this process — the counting proxies
 * in front of the test registries (registry.ts) run in it, and must answer the daemon's requests meanwhile.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { BIN } from './cli.ts';

export interface CliRun {
  status: number;
  stdout: string;
  stderr: string;
}

/** The CLI against the daemon of `stateDir()` (read at each call: suites set it in `before`). */
export function registryCli(stateDir: () => string) {
  function run(...args: string[]): Promise<CliRun> {
    return new Promise((resolve) => {
      const child = execFile(
        process.execPath,
        [BIN, '--state-dir', stateDir(), ...args],
        { env: { ...process.env, FORKBOX_URL: '' }, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 },
        (err, stdout, stderr) => resolve({ status: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
      );
      child.stdin?.end(); // `exec` forwards stdin until EOF
    });
  }
  const cli = {
    run,
    /** stdout of a command that must succeed. */
    async ok(...args: string[]): Promise<string> {
      const r = await run(...args);
      assert.equal(r.status, 0, `forkbox ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
      return r.stdout;
    },
    /** The `--json` output of a command that must succeed. */
    async json<T>(...args: string[]): Promise<T> {
      return JSON.parse(await cli.ok('--json', ...args)) as T;
    },
    /** stderr of a command that must exit with `code`. */
    async fails(code: number, ...args: string[]): Promise<string> {
      const r = await run(...args);
      assert.equal(
        r.status,
        code,
        `forkbox ${args.join(' ')}: expected exit ${code}, got ${r.status}: ${r.stderr}`,
      );
      return r.stderr;
    },
  };
  return cli;
}
