/** TTL reaping on the engine's clock (a manual one here): what expired is killed, nothing else. */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import {
  createTestEngine,
  type ManualClock,
  manualClock,
  type TestEngine,
} from '../../helpers/test-engine.ts';

describe('engine: TTL reaping', () => {
  let t: TestEngine;
  let clock: ManualClock;
  beforeEach(() => {
    clock = manualClock();
    t = createTestEngine({ now: clock.now });
  });
  afterEach(() => t.close());

  it('kills running and paused sandboxes whose TTL passed, with the reason, and no others', async () => {
    const short = await t.api.createSandbox({ name: 'short', ttlSeconds: 10 });
    const paused = await t.api.createSandbox({ name: 'paused', ttlSeconds: 10 });
    await t.api.pauseSandbox('paused');
    const long = await t.api.createSandbox({ name: 'long', ttlSeconds: 100 });
    const none = await t.api.createSandbox({ name: 'none' });
    assert.equal(short.expiresAt, new Date(clock.now() + 10_000).toISOString());
    clock.advance(9_999);
    assert.deepEqual(await t.engine.reapExpired(), []);
    clock.advance(1);
    assert.deepEqual((await t.engine.reapExpired()).sort(), [short.id, paused.id].sort());
    for (const id of [short.id, paused.id]) {
      const s = await t.api.getSandbox(id);
      assert.equal(s.state, 'killed');
      assert.equal(s.endReason, 'TTL expired');
    }
    assert.equal((await t.api.getSandbox(long.id)).state, 'running');
    assert.equal((await t.api.getSandbox(none.id)).state, 'running');
    assert.deepEqual(await t.engine.reapExpired(), [], 'nothing twice');
  });

  it('extend moves the deadline; gc reaps too', async () => {
    const s = await t.api.createSandbox({ ttlSeconds: 10 });
    clock.advance(8_000);
    await t.api.extendSandbox(s.id, 10);
    clock.advance(8_000);
    assert.deepEqual(await t.engine.reapExpired(), []);
    clock.advance(2_000);
    const report = await t.api.gc();
    assert.deepEqual(report.removedSandboxes, [s.id]);
  });

  it('a fork child keeps what is left of its source TTL unless given its own', async () => {
    const src = await t.api.createSandbox({ ttlSeconds: 100 });
    clock.advance(40_000);
    const r = await t.api.forkSandbox(src.id, { n: 1 });
    const own = await t.api.forkSandbox(src.id, { n: 1, ttlSeconds: 500 });
    assert.equal(r.children[0]?.sandbox?.expiresAt, src.expiresAt);
    assert.equal(own.children[0]?.sandbox?.expiresAt, new Date(clock.now() + 500_000).toISOString());
    clock.advance(60_000);
    const reaped = await t.engine.reapExpired();
    // The source and its first child expire together; the source stays a tombstone for the other child.
    assert.ok(reaped.includes(src.id) && reaped.includes(r.children[0]?.sandbox?.id ?? ''));
    assert.equal((await t.api.getSandbox(own.children[0]?.sandbox?.id ?? '')).state, 'running');
  });
});
