/**
 * Attack (a fault, not a hostile act): the daemon is SIGKILLed while twenty creates are in flight, then
 * restarted — by an OOM killer, a power cut of the service manager, an operator's `kill -9`. Precedent:
 * issue #11 item 10 — a `kill -9` in the middle of 20 concurrent creates leaked mounts that the restart
 * did not clean; the class is every container engine's "orphaned shim / leaked overlay mount after a
 * daemon crash" (dockerd and containerd both shipped cleanup-on-restart fixes for it).
 *
 * The kill lands at five moments (it is a race): while runc starts the template they wait for, while
 * the first sandboxes are being set up, while a sandbox is cloned but has not greeted the host (it still
 * sits in its template's cgroup), after a few answered, and after most answered.
 *
 * Contained when, after each restart: no mount, cgroup (under the state dir's `forkbox/<state-id>/`),
 * process, directory or row is left without a live owner; every sandbox is either running and usable or
 * ended with a reason; every create that was answered before the kill is running and usable; and the
 * daemon creates sandboxes again.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { sandboxCgroupDir } from '../helpers/cgroup-files.ts';
import { killableDaemon } from '../helpers/killable-daemon.ts';
import { leftovers, readStore, unplacedChildren } from '../helpers/leftovers.ts';
import { nativeUnavailable } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const why = nativeUnavailable();
const CREATES = 20;

/** How many sandbox cgroups of this state dir exist now (creates past their cgroup step). */
function sandboxCgroups(stateDir: string): number {
  try {
    return readdirSync(sandboxCgroupDir(stateDir, 'x', 'memory').replace(/\/x$/, ''), {
      withFileTypes: true,
    }).filter((d) => d.isDirectory()).length;
  } catch {
    return 0;
  }
}

describe('abuse: daemon SIGKILL during twenty concurrent creates, then restart', () => {
  before(() => {
    if (why) throw new Error(`this abuse test needs the native runtime: ${why}`);
  });
  const d = killableDaemon();

  /** Fire the creates, kill -9 the daemon once `moment` holds, restart it; returns the answered ids. */
  async function killDuringCreates(moment: (answered: number) => boolean, what: string): Promise<string[]> {
    // Every create answered, even in the instant before the daemon died, was recorded running.
    const answered: string[] = [];
    const creates = Array.from({ length: CREATES }, () =>
      d.api.createSandbox({}).then(
        (sb) => {
          answered.push(sb.id);
          return true;
        },
        () => false, // cut off by the kill
      ),
    );
    await waitFor(() => moment(answered.length), { what, timeoutMs: 180_000, intervalMs: 5 });
    await d.kill();
    const cut = (await Promise.all(creates)).filter((ok) => !ok).length;
    process.stderr.write(`# killed ${what}: ${answered.length} answered, ${cut} cut off\n`);
    await d.restart();
    return answered;
  }

  /** Nothing without an owner, every sandbox running and usable or ended, the answered ones running. */
  async function assertRecovered(answered: string[]): Promise<void> {
    const view = readStore(d.stateDir);
    assert.deepEqual(leftovers(d.stateDir, view), [], 'nothing is left without an owner');
    for (const id of answered) assert.ok(view.live.includes(id), `${id} was answered: it is still running`);
    for (const id of view.live) {
      const r = await d.api.exec(id, { argv: ['echo', id] });
      assert.equal(r.stdout, `${id}\n`, `${id} runs commands`);
    }
    for (const [id, r] of view.sandboxes)
      if (!view.live.includes(id)) assert.ok(r.endReason, `${id} ended '${r.state}' with a reason`);
    // The daemon works on: a new sandbox, and every live one is killed cleanly for the next round.
    const fresh = await d.api.createSandbox({});
    assert.equal((await d.api.exec(fresh.id, { argv: ['echo', 'new'] })).stdout, 'new\n');
    for (const id of [...view.live, fresh.id]) await d.api.killSandbox(id);
    assert.deepEqual(leftovers(d.stateDir), [], 'nothing is left after killing them all');
  }

  it('while runc starts their template (the first creates of a state dir wait for it)', async () => {
    // runc's state dir is made right before `runc run`: the kill lands around it, with runc mid-way.
    const answered = await killDuringCreates(
      () => existsSync(join(d.stateDir, 'runc')),
      'runc is starting the template',
    );
    await assertRecovered(answered);
  });

  it('while the first sandboxes are being set up (three have a cgroup)', async () => {
    const answered = await killDuringCreates(
      () => sandboxCgroups(d.stateDir) >= 3,
      'three creates have a cgroup',
    );
    await assertRecovered(answered);
  });

  it('while a sandbox is cloned but has not greeted the host yet', async () => {
    // The first such child, or the first answer at the latest: the window is short and need not be seen.
    const answered = await killDuringCreates(
      (n) => unplacedChildren(d.stateDir) > 0 || n >= 1,
      'a cloned sandbox has not greeted the host (or one create answered)',
    );
    await assertRecovered(answered);
  });

  it('after the first few creates answered', async () => {
    await assertRecovered(await killDuringCreates((n) => n >= 3, 'three creates answered'));
  });

  it('after most creates answered', async () => {
    await assertRecovered(await killDuringCreates((n) => n >= 15, 'fifteen creates answered'));
  });
});
