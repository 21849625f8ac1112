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
