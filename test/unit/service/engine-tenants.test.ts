/**
 * Tenant scoping: a tenant sees and touches only its own sandboxes and snapshots; another tenant's id
 * or name is "not found" (never "forbidden", which would confirm it exists). Host-wide template configs
 * are the host tenant's to define.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { ForkboxApi } from '../../../src/service/api.ts';
import { rejectsWith } from '../../helpers/assert-error.ts';
import { createTestEngine, type TestEngine } from '../../helpers/test-engine.ts';

describe('engine: tenants', () => {
  let t: TestEngine;
  let alice: ForkboxApi;
  let bob: ForkboxApi;
  beforeEach(() => {
    t = createTestEngine();
    alice = t.scoped({ tenant: 'alice' });
    bob = t.scoped({ tenant: 'bob' });
  });
  afterEach(() => t.close());

  it("another tenant's sandbox is not found, by id or by name, for every kind of call", async () => {
    const a = await alice.createSandbox({ name: 'secret' });
    const calls: [string, () => Promise<unknown>][] = [
      ['get by id', () => bob.getSandbox(a.id)],
      ['get by name', () => bob.getSandbox('secret')],
      ['exec', () => bob.exec(a.id, { argv: ['true'] })],
      ['startExec', () => bob.startExec(a.id, { argv: ['true'] })],
      ['runCode', () => bob.runCode(a.id, { code: '1' })],
      ['readFile', () => bob.readFile(a.id, '/etc/hostname')],
      ['writeFile', () => bob.writeFile(a.id, '/tmp/x', Buffer.from('x'))],
      ['fork', () => bob.forkSandbox(a.id, { n: 1 })],
      ['snapshot', () => bob.createSnapshot(a.id)],
      ['pause', () => bob.pauseSandbox(a.id)],
      ['extend', () => bob.extendSandbox(a.id, 60)],
      ['kill', () => bob.killSandbox(a.id)],
      ['diff', () => bob.diffSandboxes(a.id, a.id)],
    ];
    for (const [what, call] of calls) {
      const e = await rejectsWith(call(), 'not_found');
      assert.doesNotMatch(e.message, /alice/, `${what} does not name the owner`);
    }
    assert.equal((await alice.getSandbox('secret')).state, 'running', 'untouched by all that');
    assert.deepEqual(await bob.listSandboxes({ all: true }), []);
  });

  it('names are per tenant; lists and status count only the caller’s', async () => {
    const a = await alice.createSandbox({ name: 'same' });
    const b = await bob.createSandbox({ name: 'same' });
    assert.notEqual(a.id, b.id);
    assert.equal((await alice.getSandbox('same')).id, a.id);
    assert.equal((await bob.getSandbox('same')).id, b.id);
    await alice.createSandbox({});
    assert.equal((await alice.listSandboxes()).length, 2);
    assert.deepEqual((await bob.status()).sandboxes, { running: 1 });
    assert.deepEqual(
      (await t.api.listSandboxes()).map((s) => s.id),
      [],
      'the local default tenant sees none of them',
    );
  });

  it('fork children and snapshots belong to the caller; another tenant cannot restore them', async () => {
    const a = await alice.createSandbox({});
    const r = await alice.forkSandbox(a.id, { n: 1 });
    const child = r.children[0]?.sandbox?.id ?? '';
    assert.equal(t.store.getSandbox(child)?.tenant, 'alice');
    const snap = await alice.createSnapshot(a.id, { name: 'mine' });
    await rejectsWith(bob.getSnapshot(snap.id), 'not_found');
    await rejectsWith(bob.restoreSnapshot('mine'), 'not_found');
    await rejectsWith(bob.deleteSnapshot(snap.id), 'not_found');
    assert.deepEqual(await bob.listSnapshots(), []);
    assert.equal((await alice.listSnapshots()).length, 1);
    await rejectsWith(bob.mergeSandbox(a.id, child), 'not_found');
  });

  it('template configs are host-wide: only the host tenant defines or deletes them', async () => {
    await rejectsWith(alice.defineTemplate({ name: 'warm', prewarm: ['json'] }), 'permission_denied');
    await t.api.defineTemplate({ name: 'warm', prewarm: ['json'] });
    assert.ok((await alice.listTemplates()).some((x) => x.name === 'warm'));
    const s = await alice.createSandbox({ template: 'warm' });
    assert.equal(s.labels['forkbox.template'], 'warm');
    await rejectsWith(alice.deleteTemplate('warm'), 'permission_denied');
  });
});
