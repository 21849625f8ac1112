/**
 * A CLI call never replaces the operator's daemon: while a supervised `forkbox serve` with options was
 * down for a few seconds, a `forkbox merge` started a plain daemon of its own that took the state dir,
 * and the real one then failed to start. Now a daemon records how it was started (`serve.json`); where
 * an operator configured it, the CLI refuses to start one in its place and says what was configured,
 * while a state dir only ever served on demand still gets a daemon started by the CLI.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createDaemonClient } from '../../src/transports/daemon-client.ts';
import { cliFor } from '../helpers/cli.ts';
import { startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();

const answers = async (stateDir: string) => {
  const c = createDaemonClient({ socketPath: join(stateDir, 'forkbox.sock') });
  try {
    return await c.health(1000);
  } finally {
    c.close();
  }
};
const record = (stateDir: string) =>
  JSON.parse(readFileSync(join(stateDir, 'serve.json'), 'utf8')) as { configured: boolean; how: string[] };

describe('the CLI and the operator’s daemon', { skip: skip ?? false }, () => {
  const dirs: string[] = [];
  after(async () => {
    for (const d of dirs) {
      // Whatever daemon the CLI started there: stopped through its socket's owner pid.
      try {
        const pid = Number(JSON.parse(readFileSync(join(d, 'serve.json'), 'utf8')).pid);
        if (pid > 0) process.kill(pid, 'SIGTERM');
      } catch {
        // none
      }
      await new Promise((r) => setTimeout(r, 500));
      await stopServeAndClean(undefined, d).catch(() => undefined);
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('a configured daemon that is down is not replaced: the CLI says what was configured', async () => {
    const stateDir = makeStateDir();
    dirs.push(stateDir);
    const cli = cliFor(stateDir);
    const served = await startServe(stateDir, ['--pool', '0']);
    assert.equal(record(stateDir).configured, true);
    assert.deepEqual(record(stateDir).how, ['--listen', '127.0.0.1:0', '--pool', '0']);
    cli.ok('ls');
    // Down for a moment (a supervisor restarting it): no CLI call takes its place.
    served.child.kill('SIGKILL');
    await new Promise((r) => served.child.once('exit', r));
    const err = cli.fails(7, 'ls');
    assert.match(
      err,
      /the daemon configured for this state dir \(started .* as 'forkbox serve --listen 127\.0\.0\.1:0 --pool 0'/,
    );
    assert.match(err, /Start it the way it is started/);
    assert.equal(await answers(stateDir), false, 'no daemon was started in its place');
    // The operator's daemon starts again, on its state dir, as configured.
    const again = await startServe(stateDir, ['--pool', '0']);
    cli.ok('ls');
    await stopServeAndClean(again.child, undefined);
  });

  it('a state dir only ever served on demand gets a daemon started by the CLI, again after it died', async () => {
    const stateDir = makeStateDir();
    dirs.push(stateDir);
    const cli = cliFor(stateDir);
    cli.ok('ls');
    const first = record(stateDir) as { configured: boolean; pid?: number };
    assert.equal(first.configured, false, 'the on-demand daemon records itself as such');
    const pid = Number(
      (JSON.parse(readFileSync(join(stateDir, 'serve.json'), 'utf8')) as { pid: number }).pid,
    );
    process.kill(pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 300));
    cli.ok('ls');
    const second = JSON.parse(readFileSync(join(stateDir, 'serve.json'), 'utf8')) as { pid: number };
    assert.notEqual(second.pid, pid, 'a new daemon answered');
    const doctor = cli.json<{ checks: { name: string; detail: string }[] }>('doctor');
    const who = doctor.checks.find((c) => c.name === 'who serves the state dir');
    assert.match(who?.detail ?? '', new RegExp(`pid ${second.pid}, started .*started on demand`));
  });
});
