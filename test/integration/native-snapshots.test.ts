/**
 * Snapshots against the real runtime: taking one keeps the files and a live REPL copy; restores bring
 * both back any number of times; deleting is refused while sandboxes depend on it (or cascades); once
 * the live copy is gone a restore brings back files only and says so; layers are freed at the end.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxError } from '../../src/domain/errors.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type NativeFixture, nativeUnavailable, openNative, snapshotLayers } from '../helpers/native.ts';

const skip = nativeUnavailable();

describe('snapshots', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let src: string;
  const py = async (id: string, code: string) => (await api.runCode(id, { code, timeoutSeconds: 30 })).value;
  const sh = async (id: string, cmd: string) => (await api.exec(id, { cmd })).stdout;
  const code = (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (e: ForkboxError) => `${e.code}: ${e.message}`,
    );

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    src = (await api.createSandbox({ name: 'snap-src', memoryMb: 256 })).id;
    await sh(src, 'mkdir -p /work && echo v1 > /work/a.txt');
    await py(src, 'x = 1\nitems = ["a"]');
  });
  after(async () => {
    await fx?.close();
  });

  it('takes a snapshot holding files and Python state, restores it twice, and hides its holder', async () => {
    const snap = await api.createSnapshot(src, { name: 'snap1' });
    assert.equal(snap.name, 'snap1');
    assert.equal(snap.pythonState, true);
    assert.ok(snap.layers >= 2);
    // The source moves on; the snapshot does not.
    await sh(src, 'echo v2 > /work/a.txt');
    await py(src, 'x = 2');
    const r1 = await api.restoreSnapshot('snap1', { n: 2 });
    assert.equal(r1.carried.pythonState, true);
    const kids = r1.children.map((c) => {
      assert.ok(c.ok, JSON.stringify(c));
      return c.sandbox?.id ?? '';
    });
    for (const k of kids) {
      assert.equal(await py(k, 'x, items'), "(1, ['a'])");
      assert.equal(await sh(k, 'cat /work/a.txt'), 'v1\n');
    }
    await py(kids[0] ?? '', 'x = 100');
    assert.equal(await py(kids[1] ?? '', 'x'), '1');
    const r2 = await api.restoreSnapshot('snap1', {});
    assert.equal(await py(r2.children[0]?.sandbox?.id ?? '', 'x'), '1', 'restorable again');
    assert.equal(await py(src, 'x'), '2');
    const listed = await api.listSandboxes();
    assert.equal(
      listed.some((s) => s.labels['forkbox.snapshot'] !== undefined),
      false,
      'the holder is hidden',
    );
    const info = await api.getSnapshot('snap1');
    assert.deepEqual([...info.dependents].sort(), [...kids, r2.children[0]?.sandbox?.id].sort());
    assert.equal((await api.listSnapshots()).length, 1);
  });

  it('refuses to delete a snapshot with dependents, naming them, and cascades when asked', async () => {
    const refused = await code(api.deleteSnapshot('snap1'));
    assert.match(refused, /^conflict: snapshot 'snap1' is used by 3 live sandbox\(es\): sb-/);
    const del = await api.deleteSnapshot('snap1', { cascade: true });
    assert.equal(del.killed.length, 3);
    for (const k of del.killed) assert.equal((await api.getSandbox(k)).state, 'killed');
    assert.match(await code(api.restoreSnapshot('snap1', {})), /^not_found: no snapshot 'snap1'/);
    assert.match(await code(api.getSnapshot('snap1')), /^not_found/);
  });

  it('restores files only once the live copy is gone, and says so', async () => {
    const snap = await api.createSnapshot(src, { name: 'snap2' });
    const holder = (await api.listSandboxes({ labels: { 'forkbox.snapshot': snap.id } }))[0];
    assert.ok(holder, 'the holder is listed when asked for by label');
    await api.killSandbox(holder.id);
    assert.equal((await api.getSnapshot('snap2')).pythonState, false);
    const r = await api.restoreSnapshot('snap2', {});
    assert.equal(r.carried.pythonState, false);
    assert.match(r.notCarried.join(' '), /Python state/);
    const k = r.children[0]?.sandbox?.id ?? '';
    assert.equal(await sh(k, 'cat /work/a.txt'), 'v2\n');
    const fresh = await api.runCode(k, { code: 'x' });
    assert.equal(fresh.ok, false, 'a fresh REPL');
    await api.killSandbox(k);
    await api.deleteSnapshot('snap2');
    await api.killSandbox(src);
    assert.deepEqual(snapshotLayers(fx.stateDir), [], 'no snapshot layer left once nothing uses it');
  });
});
