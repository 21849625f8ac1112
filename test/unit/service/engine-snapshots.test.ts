/**
 * Snapshots through the engine: a hidden paused holder keeps files and REPL; restores fork it (any
 * number of times); once the holder is gone, restores stack new sandboxes on the frozen files only;
 * deleting refuses while sandboxes depend on it unless cascading.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { rejectsWith } from '../../helpers/assert-error.ts';
import { createTestEngine, type TestEngine } from '../../helpers/test-engine.ts';

describe('engine: snapshots', () => {
  let t: TestEngine;
  beforeEach(() => {
    t = createTestEngine();
  });
  afterEach(() => t.close());

  async function snapshotted() {
    const s = await t.api.createSandbox({ name: 'src' });
    await t.api.writeFile('src', '/tmp/f', Buffer.from('v1'));
    await t.api.runCode('src', { code: 'step = 1' });
    const snap = await t.api.createSnapshot('src', { name: 'before' });
    return { s, snap };
  }

  it('takes a snapshot held by a hidden paused sandbox; the source goes on', async () => {
    const { s, snap } = await snapshotted();
    assert.equal(snap.name, 'before');
    assert.equal(snap.source, s.id);
    assert.equal(snap.pythonState, true);
    assert.ok(snap.layers > 0);
    assert.deepEqual(snap.dependents, []);
    const holder = t.store.listSandboxes().find((r) => r.labels['forkbox.snapshot'] === snap.id);
    assert.equal(holder?.state, 'paused');
    assert.equal(holder?.session, null);
    assert.equal(holder?.expiresAt, null);
    assert.ok(!(await t.api.listSandboxes()).some((x) => x.id === holder?.id), 'the holder is not listed');
    await t.api.writeFile('src', '/tmp/f', Buffer.from('v2'));
    assert.equal((await t.api.getSnapshot('before')).id, snap.id);
    await rejectsWith(t.api.createSnapshot('src', { name: 'before' }), 'already_exists');
  });

  it('restores files and REPL state into new sandboxes, any number of times', async () => {
    const { snap } = await snapshotted();
    await t.api.writeFile('src', '/tmp/f', Buffer.from('v2'));
    await t.api.runCode('src', { code: 'step = 2' });
    const r1 = await t.api.restoreSnapshot('before', { n: 2 });
    const r2 = await t.api.restoreSnapshot(snap.id);
    assert.equal(r1.carried.pythonState, true);
    const all = [...r1.children, ...r2.children].map((c) => c.sandbox?.id ?? '');
    assert.equal(all.length, 3);
    for (const id of all) {
      assert.equal((await t.api.readFile(id, '/tmp/f')).data.toString(), 'v1');
      assert.equal((await t.api.runCode(id, { code: 'step' })).value, '1');
      assert.equal((await t.api.getSandbox(id)).labels['forkbox.snapshot'], undefined);
    }
    const holder = t.store.listSandboxes().find((r) => r.labels['forkbox.snapshot'] === snap.id);
    assert.equal(holder?.state, 'paused', 'paused again between restores');
  });

  it('once the holder is gone, restores stack on the frozen files without Python state', async () => {
    const { snap } = await snapshotted();
    const holder = t.store.listSandboxes().find((r) => r.labels['forkbox.snapshot'] === snap.id);
    // What a host reboot does: the holder's processes are gone; recovery marks it lost.
    t.runtime.crash(holder?.id ?? '');
    t = await t.restart();
    assert.equal((await t.api.getSnapshot('before')).pythonState, false);
    const r = await t.api.restoreSnapshot('before', { n: 2 });
    assert.equal(r.carried.pythonState, false);
    assert.match(r.notCarried.join(' '), /no longer holds a live copy/);
    for (const c of r.children) {
      assert.equal(c.ok, true);
      const id = c.sandbox?.id ?? '';
      assert.equal((await t.api.readFile(id, '/tmp/f')).data.toString(), 'v1');
      assert.equal((await t.api.runCode(id, { code: 'step' })).error?.type, 'NameError');
    }
    await rejectsWith(t.api.restoreSnapshot('before', { n: 0 }), 'invalid_argument', /1 to 100/);
  });

  it('delete refuses while live sandboxes stack on it, and cascades on request', async () => {
    const { snap } = await snapshotted();
    const t2 = t;
    t.runtime.crash(t.store.listSandboxes().find((r) => r.labels['forkbox.snapshot'] === snap.id)?.id ?? '');
    t = await t2.restart();
    const r = await t.api.restoreSnapshot('before', { n: 1 });
    const dep = r.children[0]?.sandbox?.id ?? '';
    assert.deepEqual((await t.api.getSnapshot('before')).dependents, [dep]);
    await rejectsWith(t.api.deleteSnapshot('before'), 'conflict', new RegExp(dep));
    const d = await t.api.deleteSnapshot('before', { cascade: true });
    assert.deepEqual(d, { deleted: snap.id, killed: [dep] });
    assert.equal((await t.api.getSandbox(dep)).state, 'killed');
    await rejectsWith(t.api.getSnapshot('before'), 'not_found');
  });

  it('restored sandboxes stack on its files too; deleting it with cascade kills them and its holder', async () => {
    const { snap } = await snapshotted();
    const other = await t.api.createSandbox({});
    const r = await t.api.restoreSnapshot('before');
    const restored = r.children[0]?.sandbox?.id ?? '';
    const holder = t.store.listSandboxes().find((x) => x.labels['forkbox.snapshot'] === snap.id);
    assert.deepEqual((await t.api.getSnapshot('before')).dependents, [restored]);
    await rejectsWith(t.api.deleteSnapshot('before'), 'conflict', /cascade/);
    const d = await t.api.deleteSnapshot('before', { cascade: true });
    assert.deepEqual(d, { deleted: snap.id, killed: [restored] });
    assert.equal(t.store.getSandbox(holder?.id ?? '')?.state, 'killed');
    assert.equal((await t.api.getSandbox('src')).state, 'running', 'the source is not a dependent');
    assert.equal((await t.api.getSandbox(other.id)).state, 'running');
    assert.deepEqual(await t.api.listSnapshots(), []);
  });

  it('refuses to rebuild an image in place while a snapshot or a sandbox is built on it', async () => {
    t.images.images.set('debian', { ...t.images.require('debian'), source: 'debootstrap:bookworm' });
    const { snap } = await snapshotted();
    await t.api.killSandbox('src');
    await rejectsWith(
      t.api.buildImage({ distro: 'debian', name: 'debian' }),
      'conflict',
      new RegExp(snap.id),
    );
    await t.api.deleteSnapshot(snap.id);
    const s = await t.api.createSandbox({ name: 'user' });
    await rejectsWith(t.api.buildImage({ distro: 'debian', name: 'debian' }), 'conflict', new RegExp(s.id));
    await t.api.killSandbox('user');
    assert.equal((await t.api.buildImage({ distro: 'debian', name: 'debian' })).name, 'debian');
  });
});
