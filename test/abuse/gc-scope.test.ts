/**
 * Attack (one daemon against another): run `forkbox gc` on one daemon while another daemon, with its own
 * --state-dir, runs sandboxes on the same host. Precedent: issue #11 item 10 — gc walked the host-wide
 * cgroup tree (`forkbox/sandboxes/*`), took every sandbox its own store did not know for garbage and
 * killed the other daemon's sandboxes.
 *
 * Contained when: gc of daemon A leaves daemon B's sandboxes running and usable, leaves a cgroup in the
 * pre-state-id location that A's store does not know, and keeps A's own live sandbox; every cgroup a daemon
 * makes is under `forkbox/<its state id>/`.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type AbuseDaemon, agentPid, running, startDaemon } from '../helpers/abuse.ts';
import { controllerDir, sandboxCgroupDir } from '../helpers/cgroup-files.ts';
import { nativeUnavailable } from '../helpers/native.ts';

const why = nativeUnavailable();

describe('abuse: gc of one daemon against another daemon’s sandboxes', () => {
  let a: AbuseDaemon;
  let b: AbuseDaemon;
  const legacy = controllerDir('freezer', `forkbox/sandboxes/abuse-gc-${randomBytes(4).toString('hex')}`);

  before(async () => {
    if (why) throw new Error(`this abuse test needs the native runtime: ${why}`);
    a = await startDaemon();
    b = await startDaemon();
  });
  after(async () => {
    if (existsSync(legacy)) rmdirSync(legacy);
    await a?.stop();
    await b?.stop();
  });

  it('touches only its own state dir’s objects', async () => {
    const mine = await a.api.createSandbox({});
    const theirs = await b.api.createSandbox({});
    const theirPid1 = agentPid(b.stateDir, theirs.id);
    assert.notEqual(
      readFileSync(join(a.stateDir, 'state-id'), 'utf8'),
      readFileSync(join(b.stateDir, 'state-id'), 'utf8'),
    );
    assert.ok(existsSync(sandboxCgroupDir(b.stateDir, theirs.id, 'freezer')), 'cgroups carry the state id');
    // A cgroup where forkbox kept sandboxes before state ids, of a sandbox A does not know.
    mkdirSync(legacy, { recursive: true });

    const report = await a.api.gc();
    process.stderr.write(`# gc of A: ${JSON.stringify(report)}\n`);
    assert.equal(running(theirPid1), true, 'B’s sandbox’s PID 1 survives A’s gc');
    assert.ok(existsSync(sandboxCgroupDir(b.stateDir, theirs.id, 'freezer')), 'B’s cgroup stays');
    assert.ok(existsSync(legacy), 'an unknown pre-state-id cgroup stays');
    assert.equal((await b.api.exec(theirs.id, { argv: ['echo', 'b'] })).stdout, 'b\n');
    assert.equal((await a.api.exec(mine.id, { argv: ['echo', 'a'] })).stdout, 'a\n');
    assert.equal(
      report.removedCgroups.some((c) => c.includes(theirs.id)),
      false,
    );
  });
});
