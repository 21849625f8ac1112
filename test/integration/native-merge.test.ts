/**
 * Merge against the real runtime: the winning fork's files and REPL answer under the parent's id and
 * name, the winner's old id is an alias, siblings keep running, bad merges are refused, and everything
 * is released once the tree is killed.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ForkboxError } from '../../src/domain/errors.ts';
import { mountsUnder } from '../../src/runtimes/native/host/mounts.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type NativeFixture, nativeUnavailable, openNative, snapshotLayers } from '../helpers/native.ts';

const skip = nativeUnavailable();

describe('merging a fork into its parent', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
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
  });
  after(async () => {
    await fx?.close();
  });

  it('makes the winner answer under the parent id and name; siblings and aliases keep working', async () => {
    const parent = await api.createSandbox({ name: 'merge-parent', memoryMb: 256 });
    await py(parent.id, 'attempt = None');
    const r = await api.forkSandbox(parent.id, { n: 2 });
    const [w, sib] = r.children.map((c) => c.sandbox?.id ?? '') as [string, string];
    await py(w, 'attempt = "winner"');
    await sh(w, 'echo from-winner > /root/result.txt');
    await py(sib, 'attempt = "sibling"');

    const m = await api.mergeSandbox('merge-parent', w);
    assert.equal(m.sandbox.id, parent.id);
    assert.equal(m.sandbox.name, 'merge-parent');
    assert.equal(m.sandbox.state, 'running');
    assert.equal(m.winner, w);
    assert.equal(await py(parent.id, 'attempt'), "'winner'");
    assert.equal(await sh('merge-parent', 'cat /root/result.txt'), 'from-winner\n');
    // The winner's old id is an alias of the parent's.
    assert.equal(await py(w, 'attempt'), "'winner'");
    assert.equal((await api.getSandbox(w)).id, parent.id);
    // The sibling is untouched.
    assert.equal(await py(sib, 'attempt'), "'sibling'");
    assert.equal((await api.getSandbox(sib)).state, 'running');
    // The parent's old REPL is gone: nothing answers "None" any more.
    const listed = await api.listSandboxes();
    assert.deepEqual(listed.map((s) => s.id).sort(), [parent.id, sib].sort());

    // A merged parent forks again like any sandbox.
    const again = await api.forkSandbox(parent.id, { n: 1 });
    assert.equal(await py(again.children[0]?.sandbox?.id ?? '', 'attempt'), "'winner'");
  });

  it('refuses to merge a sandbox into itself or into a non-ancestor', async () => {
    const a = (await api.createSandbox({})).id;
    const b = (await api.createSandbox({})).id;
    assert.match(
      await code(api.mergeSandbox(a, a)),
      /^invalid_argument: cannot merge sandbox .* into itself/,
    );
    assert.match(await code(api.mergeSandbox(a, b)), /^invalid_argument: '.*' is not an ancestor of/);
    assert.match(await code(api.mergeSandbox(a, 'sb-nope')), /^not_found/);
  });

  it('releases every process, mount and layer once the whole tree is killed', async () => {
    for (const s of await api.listSandboxes()) await api.killSandbox(s.id, { cascade: true });
    const left = (await api.listSandboxes({ all: true })).filter(
      (s) => s.state !== 'killed' && s.state !== 'failed',
    );
    assert.deepEqual(left, []);
    assert.deepEqual(
      readdirSync(join(fx.stateDir, 'sandboxes')),
      [],
      'no sandbox directory left (tombstones released)',
    );
    assert.deepEqual(
      mountsUnder(join(fx.stateDir, 'inbox')).filter((m) => !/\/inbox(\/tpl-[0-9a-f]+)?$/.test(m)),
      [],
    );
    assert.deepEqual(snapshotLayers(fx.stateDir), []);
  });
});
