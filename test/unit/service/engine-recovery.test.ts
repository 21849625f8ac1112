/**
 * Start-up recovery: live sandboxes the runtime still holds are adopted with their state; those whose
 * processes are gone are marked lost and released; half-created or half-killed ones are finished off.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { createTestEngine, type TestEngine } from '../../helpers/test-engine.ts';

describe('engine: recovery after a restart', () => {
  let t: TestEngine;
  beforeEach(() => {
    t = createTestEngine();
  });
  afterEach(() => t.close());

  it('adopts what still runs, files and REPL state included, paused ones staying paused', async () => {
    const a = await t.api.createSandbox({ name: 'a' });
    await t.api.runCode('a', { code: 'kept = 1' });
    const p = await t.api.createSandbox({ name: 'p' });
    await t.api.pauseSandbox('p');
    t = await t.restart();
    assert.equal((await t.api.getSandbox(a.id)).state, 'running');
    assert.equal((await t.api.runCode('a', { code: 'kept' })).value, '1');
    assert.equal((await t.api.getSandbox(p.id)).state, 'paused');
  });

  it('a sandbox whose processes are gone is lost, then killed; the others are untouched', async () => {
    const gone = await t.api.createSandbox({});
    const fine = await t.api.createSandbox({});
    t.runtime.crash(gone.id);
    t = await t.restart();
    const g = await t.api.getSandbox(gone.id);
    assert.equal(g.state, 'killed');
    assert.match(g.endReason ?? '', /lost|processes were gone/);
    assert.equal((await t.api.getSandbox(fine.id)).state, 'running');
  });

  it('a sandbox left creating or killing by a crash is finished off', async () => {
    const s = await t.api.createSandbox({});
    t.store.transitionSandbox(s.id, 'killing');
    const half = { ...(t.store.getSandbox(s.id) as NonNullable<ReturnType<typeof t.store.getSandbox>>) };
    const creating = { ...half, id: 'sb-0000000001', name: 'sb-0000000001', state: 'creating' as const };
    t.store.insertSandbox(creating);
    t = await t.restart();
    for (const id of [s.id, creating.id]) {
      const r = await t.api.getSandbox(id);
      assert.equal(r.state, 'killed');
      assert.equal(r.endReason, 'interrupted by a daemon restart');
    }
    assert.equal(t.runtime.sandboxes.has(s.id), false, 'its processes were released');
  });
});

describe('engine: revival of sandboxes whose processes are gone (a reboot)', () => {
  let t: TestEngine;
  beforeEach(() => {
    t = createTestEngine({ revive: true });
  });
  afterEach(() => t.close());

  it('a crashed sandbox runs again with its files, a fresh REPL and the restarted label', async () => {
    const a = await t.api.createSandbox({ name: 'a' });
    await t.api.writeFile('a', '/root/keep.txt', Buffer.from('kept'));
    await t.api.runCode('a', { code: 'x = 1' });
    const before = t.store.getSandbox(a.id);
    t.runtime.crash(a.id);
    t = await t.restart();
    const r = await t.api.getSandbox(a.id);
    assert.equal(r.state, 'running');
    assert.match(r.labels['forkbox.restarted'] ?? '', /^\d{4}-\d\d-\d\dT/);
    assert.notEqual(t.store.getSandbox(a.id)?.hostPid, before?.hostPid, 'a new PID 1');
    assert.equal((await t.api.readFile('a', '/root/keep.txt')).data.toString(), 'kept');
    assert.equal((await t.api.runCode('a', { code: 'x' })).error?.type, 'NameError');
  });

  it('a paused one comes back running; forks of a revived sandbox do not inherit the label', async () => {
    const p = await t.api.createSandbox({ name: 'p' });
    await t.api.pauseSandbox('p');
    t.runtime.crash(p.id);
    t = await t.restart();
    assert.equal((await t.api.getSandbox(p.id)).state, 'running');
    const f = await t.api.forkSandbox('p', { n: 1 });
    const child = f.children[0]?.sandbox;
    assert.ok(child);
    assert.equal(child.labels['forkbox.restarted'], undefined);
  });

  it('a revived child no longer holds its parent: killing the parent leaves no tombstone', async () => {
    const parent = await t.api.createSandbox({ name: 'parent' });
    const f = await t.api.forkSandbox('parent', { n: 1 });
    const child = f.children[0]?.sandbox?.id ?? '';
    t.runtime.crash(child);
    t = await t.restart();
    assert.equal((await t.api.getSandbox(child)).state, 'running');
    await t.api.killSandbox(parent.id);
    const p = t.store.getSandbox(parent.id);
    assert.equal(p?.state, 'killed');
    assert.notEqual(p?.runtime.tombstone, true, 'the parent waits for no revived child');
  });

  it('one that cannot be revived is lost as before; pool sandboxes and snapshot holders are not revived', async () => {
    const gone = await t.api.createSandbox({ name: 'gone' });
    await t.api.createSnapshot('gone', { name: 'snap' });
    const holder = t.store.listSandboxes({}).find((r) => r.labels['forkbox.snapshot'] !== undefined);
    assert.ok(holder, 'the snapshot has a holder sandbox');
    t.runtime.crash(holder.id);
    t.runtime.sandboxes.delete(gone.id); // its files are gone: it cannot be started again
    const once = await t.api.createSandbox({ name: 'once' });
    t.runtime.crash(once.id);
    t.runtime.failNext('once', 'a template still starting');
    t = await t.restart();
    assert.equal((await t.api.getSandbox(once.id)).state, 'running', 'a first failure is tried again');
    const g = await t.api.getSandbox(gone.id);
    assert.equal(g.state, 'killed');
    assert.match(g.endReason ?? '', /lost/);
    assert.equal(t.store.getSandbox(holder.id)?.state, 'killed', 'the holder is lost, not revived');
    assert.deepEqual(
      t.runtime.calls.filter((c) => c.op === 'reviveSandbox').map((c) => c.rid),
      [gone.id, once.id, gone.id, once.id],
      'each tried twice at most; the holder never',
    );
  });
});
