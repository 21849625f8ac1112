/**
 * Attack (a fault, not a hostile act): the daemon is SIGKILLed while ten commands run, one ends while it
 * is down, and it restarts. Precedent: issue #11 items 12 and 15 — after a crash an exec that was running
 * was only marked "interrupted" while its processes went on, and one that finished while the daemon was
 * down was reported `failed` instead of its exit status.
 * Contained when, after the restart, every exec that was running is ended for real (no process of it is
 * left) and recorded `interrupted` (killed), the one that ended meanwhile reports its real exit status, no
 * exec row is left `running`, no exec group is left (the old spawner's included), nothing on the host is
 * left without an owner (mounts, cgroups, processes, directories: test/helpers/leftovers.ts), and the
 * sandbox runs commands again.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { sandboxCgroupDir } from '../helpers/cgroup-files.ts';
import { hostProcessesOf } from '../helpers/cli.ts';
import { processesIn, until } from '../helpers/exec-probe.ts';
import { killableDaemon } from '../helpers/killable-daemon.ts';
import { leftovers, readStore } from '../helpers/leftovers.ts';
import { nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();
const cmdline = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return ''; // it ended
  }
};

describe('abuse: daemon SIGKILL with ten running execs, then restart', { skip: skip ?? false }, () => {
  const d = killableDaemon();

  it('ends the running execs for real and reports the one that ended meanwhile honestly', async () => {
    const { id } = await d.api.createSandbox({});
    const running: string[] = [];
    for (let i = 0; i < 10; i++) {
      const rec = await d.api.startExec(id, { cmd: `setsid sleep 96${i} & sleep 97${i}` });
      running.push(rec.id);
    }
    // It ends when told to, through the sandbox's inbox (a host directory bound at /.forkbox/inbox).
    const meanwhile = await d.api.startExec(id, {
      cmd: 'until [ -e /.forkbox/inbox/go-7 ]; do sleep 0.05; done; exit 7',
    });
    await until('all of them to run', async () => (await processesIn(d.api, id, 'sleep 9')).length === 20);
    assert.ok(
      hostProcessesOf(id).some((p) => cmdline(p).includes('go-7')),
      'the short exec still runs when the daemon is killed',
    );
    await d.kill();
    // The short one ends while no daemon runs; the others keep running until the restart.
    writeFileSync(join(d.stateDir, 'inbox', id, 'go-7'), '');
    await until('the short one to end', () => hostProcessesOf(id).every((p) => !cmdline(p).includes('go-7')));
    await d.restart();
    for (const execId of running) {
      const p = await d.api.pollExec(id, execId);
      assert.equal(p.exec.state, 'interrupted', JSON.stringify(p.exec));
      assert.equal(p.exec.signal, 9);
    }
    const m = (await d.api.pollExec(id, meanwhile.id)).exec;
    assert.equal(m.state, 'exited', JSON.stringify(m));
    assert.equal(m.exitCode, 7);
    // Before any new exec: every exec group of the old daemon is gone, the old spawner's too.
    const work = `${sandboxCgroupDir(d.stateDir, id, 'freezer')}/work`;
    const groups = () =>
      readdirSync(work, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name);
    assert.deepEqual(groups(), [], 'no exec group is left');
    const view = readStore(d.stateDir);
    assert.deepEqual(view.runningExecs, [], "no exec row is left 'running'");
    assert.deepEqual(view.live, [id]);
    assert.deepEqual(leftovers(d.stateDir, view), [], 'nothing is left without an owner');
    assert.deepEqual(await processesIn(d.api, id, 'sleep 9'), [], 'nothing of them runs');
    // No exec group holds a process but the spawner waiting in the next one. A group that ended between
    // the listing and the read holds nothing.
    const procsIn = (g: string) => {
      try {
        return readFileSync(`${work}/${g}/cgroup.procs`, 'utf8').trim().split('\n').filter(Boolean).length;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
        throw err;
      }
    };
    const busy = groups()
      .map(procsIn)
      .filter((n) => n > 1);
    assert.deepEqual(busy, []);
    assert.equal((await d.api.exec(id, { argv: ['echo', 'after'] })).stdout, 'after\n');
  });
});
