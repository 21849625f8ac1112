/**
 * Client sessions: a session's non-persistent sandboxes live while a client is attached, die after a
 * grace once the last one detaches, survive a re-attach within the grace; after a restart, sessions
 * nobody re-attaches end after the re-attach window.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { createTestEngine, type TestEngine } from '../../helpers/test-engine.ts';
import { waitFor } from '../../helpers/wait-for.ts';

const state = async (t: TestEngine, id: string) => (await t.api.getSandbox(id)).state;

describe('engine: client sessions', () => {
  let t: TestEngine;
  beforeEach(() => {
    t = createTestEngine({ sessionGraceMs: 30, sessionReattachMs: 30 });
  });
  afterEach(() => t.close());

  it('kills a session’s sandboxes after the last client detaches, keeps persistent ones', async () => {
    const detach = t.engine.attachSession('s1');
    const inSession = t.scoped({ tenant: 'default', session: 's1' });
    const temp = await inSession.createSandbox({});
    const kept = await inSession.createSandbox({ persistent: true });
    const other = await t.api.createSandbox({});
    assert.equal(temp.persistent, false);
    assert.equal(kept.persistent, true);
    detach();
    await waitFor(async () => (await state(t, temp.id)) === 'killed', {
      what: 'the session sandbox is killed',
    });
    assert.match((await t.api.getSandbox(temp.id)).endReason ?? '', /session ended/);
    assert.equal(await state(t, kept.id), 'running');
    assert.equal(await state(t, other.id), 'running');
  });

  it('a session stays while any client is attached, and a re-attach within the grace keeps it', async (c) => {
    // The engine's timers on a mock clock: "no kill yet" is then a fact, not a guess about timing.
    c.mock.timers.enable({ apis: ['setTimeout'] });
    const settle = async () => {
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    };
    const d1 = t.engine.attachSession('s2');
    const d2 = t.engine.attachSession('s2');
    const sb = await t.scoped({ tenant: 'default', session: 's2' }).createSandbox({});
    d1();
    d1(); // detaching twice counts once
    c.mock.timers.tick(1000);
    await settle();
    assert.equal(await state(t, sb.id), 'running', 'still attached through d2');
    d2();
    c.mock.timers.tick(10); // within the 30 ms grace
    const d3 = t.engine.attachSession('s2');
    c.mock.timers.tick(1000);
    await settle();
    assert.equal(await state(t, sb.id), 'running', 're-attached within the grace');
    d3();
    c.mock.timers.tick(30);
    await settle();
    assert.equal(await state(t, sb.id), 'killed');
  });

  it('after a restart, a session nobody re-attaches ends; a re-attached one is kept', async () => {
    t.engine.attachSession('gone');
    t.engine.attachSession('back');
    const lost = await t.scoped({ tenant: 'default', session: 'gone' }).createSandbox({});
    const kept = await t.scoped({ tenant: 'default', session: 'back' }).createSandbox({});
    const t2 = await t.restart({ sessionReattachMs: 300 });
    t = t2;
    const detach = t.engine.attachSession('back');
    await waitFor(async () => (await state(t, lost.id)) === 'killed', {
      what: 'the orphaned session’s sandbox is killed after the re-attach window',
    });
    assert.equal(await state(t, kept.id), 'running');
    detach();
    await waitFor(async () => (await state(t, kept.id)) === 'killed', {
      what: 'the re-attached session ends',
    });
  });
});
