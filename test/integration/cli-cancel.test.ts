/**
 * Ctrl-C of the CLI leaves no process behind in the sandbox (issue #12, cancellation): SIGINT to
 * `forkbox exec` running `sleep 1000` — with children that left its session (`setsid`) and its process
 * group (a subshell's background job) — and to `forkbox run`, against a real daemon.
 *
 * The CLI's part: the first SIGINT aborts the exec request (its connection closes) and exits 130; for
 * `run` it also kills the sandbox first. The daemon's part — cancelling an exec whose request was
 * aborted, its whole process tree — is what the `exec` case checks through another exec.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import type { SandboxInfo } from '../../src/service/api.ts';
import { type Cli, cliFor, exitOf, hostProcessesOf, sandboxProcesses, waitFor } from '../helpers/cli.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();
/** A command, a setsid'd child (own session) and a detached subshell job (own process group). */
const TREE = 'setsid sleep 1000 & (sleep 1000 &); sleep 1000';

const sleeps = (procs: string[]) => procs.filter((l) => l.endsWith(' sleep'));

describe('Ctrl-C of the CLI', { skip: skip ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;
  let cli: Cli;
  const started: ChildProcess[] = [];

  before(async () => {
    stateDir = makeStateDir();
    daemon = await startServe(stateDir);
    cli = cliFor(stateDir);
  });
  after(async () => {
    for (const c of started) if (c.exitCode === null) c.kill('SIGKILL');
    await stopServeAndClean(daemon?.child, stateDir);
  });

  it('forkbox exec: SIGINT stops the command and every process it started', async () => {
    const { id } = cli.json<SandboxInfo>('create');
    const exec = cli.start(['exec', id, '--', 'sh', '-c', TREE]);
    started.push(exec);
    // All three sleeps run before the interrupt, so the check below is not vacuous.
    await waitFor(() => (sleeps(sandboxProcesses(cli, id)).length === 3 ? true : undefined), 'three sleeps');

    exec.kill('SIGINT');
    assert.equal(await exitOf(exec), 130, 'the CLI exits 128+SIGINT');
    // Needs the daemon to cancel an exec whose REST request was aborted (the sync exec route).
    let procs: string[] = [];
    const left = await waitFor(
      () => {
        procs = sandboxProcesses(cli, id);
        return procs.length === 0 ? procs : undefined;
      },
      () =>
        `no process left in ${id} after the interrupt (still there: ${procs.join(', ')}); ` +
        `daemon log tail:\n${daemon?.log().slice(-4000) ?? ''}`,
    );
    assert.deepEqual(left, []);
    // The sandbox itself lives on: only the command was stopped.
    assert.equal(cli.json<SandboxInfo>('inspect', id).state, 'running');
    cli.ok('kill', id);
  });

  it('forkbox run: SIGINT kills the sandbox, and nothing of it is left on the host', async () => {
    const run = cli.start(['run', '--', 'sh', '-c', TREE]);
    started.push(run);
    const id = await waitFor(() => {
      const mine = cli.json<SandboxInfo[]>('ls').find((s) => s.labels['forkbox.run'] === 'true');
      return mine?.id;
    }, 'the run sandbox');
    await waitFor(() => (sleeps(sandboxProcesses(cli, id)).length === 3 ? true : undefined), 'three sleeps');
    assert.ok(hostProcessesOf(id).length >= 4, 'the host sees the sandbox’s processes in its cgroups');

    run.kill('SIGINT');
    assert.equal(await exitOf(run), 130);
    // run waits for the kill before exiting.
    assert.equal(cli.json<SandboxInfo>('inspect', id).state, 'killed');
    assert.deepEqual(hostProcessesOf(id), [], 'no process of the sandbox is left on the host');
  });
});
