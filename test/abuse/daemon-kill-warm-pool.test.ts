/**
 * Attack (a fault, not a hostile act): the daemon is SIGKILLed while its warm pool holds ready, untaken
 * sandboxes, then restarted — without the pool, as an operator turning it off after the crash would.
 * Precedent: the class of pre-warmed capacity leaked by a crashed scheduler (idle pre-started
 * containers and VMs of a warm pool that no restart reclaims, running and billed with no owner — the
 * orphaned-shim class of dockerd/containerd cleanup-on-restart fixes, applied to capacity nobody asked
 * for yet).
 *
 * Contained when, after the restart: every pooled sandbox of the dead daemon is killed (its row ended
 * with a reason, its PID 1 gone), none was ever shown to a tenant, nothing is left without an owner, and
 * the daemon creates sandboxes again.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { killableDaemon } from '../helpers/killable-daemon.ts';
import { leftovers, readStore } from '../helpers/leftovers.ts';
import { nativeUnavailable } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const why = nativeUnavailable();

/** Untaken pooled sandboxes in the store (read only): id and PID 1's host pid. */
function pooled(stateDir: string): { id: string; state: string; pid: number | null }[] {
  const db = new Database(join(stateDir, 'forkbox.db'), { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare("SELECT id, state, host_pid AS pid FROM sandboxes WHERE tenant = 'forkbox:pool'")
      .all() as { id: string; state: string; pid: number | null }[];
  } finally {
    db.close();
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('abuse: daemon SIGKILL with a full warm pool, then restart without one', () => {
  before(() => {
    if (why) throw new Error(`this abuse test needs the native runtime: ${why}`);
  });
  const d = killableDaemon(['--pool', '3']);

  it('kills every pooled sandbox the dead daemon left', async () => {
    const ready = await waitFor(
      () => {
        const rows = pooled(d.stateDir).filter((r) => r.state === 'running');
        return rows.length === 3 ? rows : undefined;
      },
      { what: 'three pooled sandboxes running', timeoutMs: 60_000 },
    );
    assert.deepEqual(await d.api.listSandboxes({ all: true }), [], 'never shown to a tenant');
    const pids = ready.map((r) => r.pid ?? 0);
    assert.ok(pids.every((p) => p > 0 && alive(p)));

    await d.kill();
    assert.ok(pids.every(alive), 'a SIGKILLed daemon leaves its sandboxes running');
    await d.restart([]);

    for (const r of pooled(d.stateDir).filter((x) => ready.some((y) => y.id === x.id))) {
      assert.equal(r.state, 'killed', `${r.id} was killed at recovery`);
    }
    await waitFor(() => pids.every((p) => !alive(p)), { what: 'their PID 1s are gone' });
    const view = readStore(d.stateDir);
    assert.deepEqual(view.live, [], 'no live sandbox is left');
    for (const r of ready) assert.ok(view.sandboxes.get(r.id)?.endReason, `${r.id} ended with a reason`);
    assert.deepEqual(leftovers(d.stateDir, view), [], 'nothing is left without an owner');

    const fresh = await d.api.createSandbox({});
    assert.equal((await d.api.exec(fresh.id, { argv: ['echo', 'new'] })).stdout, 'new\n');
    await d.api.killSandbox(fresh.id);
    assert.deepEqual(
      pooled(d.stateDir).filter((r) => r.state === 'running'),
      [],
      'no pool without --pool',
    );
  });
});
