/**
 * Attack: fork bomb — bash `:(){ :|:& };:` and a Python `os.fork()` loop, from an exec and from the REPL.
 * Precedent: cyber-dojo/runner `server/test/src/fork_bomb_test.rb`, jeroen/RAppArmor
 * `tests/testthat/test-rlimit_nproc.R` (peers 6b #1).
 * Contained when: fork fails with EAGAIN at the sandbox's pids limit (the cgroup's `pids.events` counts
 * it), the bomb never holds more processes than the limit (seen from the host), another sandbox's exec
 * still answers, and killing the sandbox leaves none of the bomb's processes on the host.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { cgroupDirOf, hostPidsWith, replPython, token, waitFor } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();
const PIDS = 64;

/** `max N` of pids.events in the cgroup of any of `pids` (v1: counted where the failing fork ran). */
function forkFailures(pids: number[]): number {
  let most = 0;
  for (const pid of pids) {
    const dir = cgroupDirOf(pid, 'pids');
    if (!dir) continue;
    try {
      most = Math.max(most, Number(/^max (\d+)/m.exec(readFileSync(`${dir}/pids.events`, 'utf8'))?.[1] ?? 0));
    } catch {
      // the process moved or ended
    }
  }
  return most;
}

describe('abuse: fork bomb', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let bystander: string;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    bystander = (await api.createSandbox({ name: 'bystander' })).id;
  });
  after(async () => {
    await fx?.close();
  });

  /** Start a bomb whose processes carry `marker` in their command line; check it is held; kill it. */
  async function bombIsHeld(argv: (marker: string) => string[]): Promise<void> {
    const { id } = await api.createSandbox({ pids: PIDS });
    const marker = token('bomb');
    await api.startExec(id, { argv: argv(marker) });
    try {
      // It hits the limit: the kernel refuses forks (EAGAIN) and counts each refusal in pids.events.
      await waitFor('the bomb to hit the pids limit (pids.events max > 0)', () => {
        const pids = hostPidsWith(marker);
        assert.ok(pids.length <= PIDS, `${pids.length} bomb processes on the host, over the limit ${PIDS}`);
        return forkFailures(pids) > 0;
      });
      for (let i = 0; i < 5; i++) {
        const usage = (await api.getSandbox(id, { usage: true })).usage;
        assert.ok((usage?.pids ?? 0) <= PIDS, `the sandbox holds ${usage?.pids} processes, over ${PIDS}`);
        assert.ok(hostPidsWith(marker).length <= PIDS);
      }
      // Another sandbox is served while the bomb runs.
      const alive = await api.exec(bystander, { argv: ['echo', 'alive'], timeoutSeconds: 30 });
      assert.equal(alive.stdout, 'alive\n');
      assert.ok(hostPidsWith(marker).length > 0, 'the bomb is still running before the kill');
    } finally {
      await api.killSandbox(id);
    }
    await waitFor('no bomb process left on the host after the kill', () => hostPidsWith(marker).length === 0);
  }

  it('bash :(){ :|:& };: is held at the pids limit and leaves nothing after a kill', async () => {
    await bombIsHeld((marker) => ['bash', '-c', ':(){ :|:& };:', marker]);
  });

  it('a Python os.fork() loop in an exec is held at the pids limit and leaves nothing after a kill', async () => {
    const loop = [
      'import os, time',
      'while True:',
      '    try:',
      '        os.fork()',
      '    except OSError:',
      '        time.sleep(0.05)',
    ].join('\n');
    await bombIsHeld((marker) => ['python3', '-c', loop, marker]);
  });

  it('an os.fork() loop in the REPL gets EAGAIN below the limit, and the REPL keeps its state', async () => {
    const { id } = await api.createSandbox({ pids: PIDS });
    await api.runCode(id, { code: 'kept = 42' });
    const r = await replPython<{ forked: number; errno: string | null }>(
      api,
      id,
      [
        'import errno, json, os, signal, time',
        'kids, err = [], None',
        'try:',
        '    while len(kids) < 4 * 64:',
        '        pid = os.fork()',
        '        if pid == 0:',
        '            try:',
        '                time.sleep(600)',
        '            finally:',
        '                os._exit(0)',
        '        kids.append(pid)',
        'except OSError as e:',
        '    err = errno.errorcode.get(e.errno)',
        'for k in kids:',
        '    os.kill(k, signal.SIGKILL)',
        'for k in kids:',
        '    os.waitpid(k, 0)',
        'print(json.dumps({"forked": len(kids), "errno": err}))',
      ].join('\n'),
    );
    assert.equal(r.errno, 'EAGAIN', JSON.stringify(r));
    assert.ok(r.forked < PIDS, `${r.forked} forks succeeded with a limit of ${PIDS}`);
    assert.equal((await api.runCode(id, { code: 'kept' })).value, '42');
    assert.equal((await api.exec(bystander, { argv: ['echo', 'alive'] })).stdout, 'alive\n');
    await api.killSandbox(id);
  });
});
