/**
 * Sandbox lifecycles through the real engine and SQLite store over the fake runtime: create with
 * defaults and validation, the state machine (pause, resume, kill), failed creates, TTL extension,
 * listing, status and image removal.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { DEFAULT_LIMITS } from '../../../src/domain/types.ts';
import { rejectsWith } from '../../helpers/assert-error.ts';
import { createTestEngine, type TestEngine } from '../../helpers/test-engine.ts';

describe('engine: sandbox lifecycle', () => {
  let t: TestEngine;
  beforeEach(() => {
    t = createTestEngine();
  });
  afterEach(() => t.close());

  it('creates a running sandbox with the default limits, or the ones asked for', async () => {
    const a = await t.api.createSandbox({});
    assert.equal(a.state, 'running');
    assert.equal(a.name, a.id);
    assert.match(a.id, /^sb-[0-9a-f]{10}$/);
    assert.deepEqual(a.limits, DEFAULT_LIMITS);
    assert.equal(a.image, 'debian');
    assert.equal(a.expiresAt, null);
    assert.equal(a.persistent, true, 'a create outside any session is persistent');
    const b = await t.api.createSandbox({ name: 'b', memoryMb: 256, cpus: 0.5, pids: 64, env: { K: 'v' } });
    assert.deepEqual(b.limits, { ...DEFAULT_LIMITS, memoryBytes: 256 * 2 ** 20, cpus: 0.5, pids: 64 });
    assert.equal((await t.api.exec('b', { argv: ['printenv', 'K'] })).stdout, 'v\n');
    assert.equal(t.store.getSandbox(b.id)?.state, 'running');
  });

  it('refuses bad names, duplicate live names, bad env and unknown images without recording anything', async () => {
    await t.api.createSandbox({ name: 'taken' });
    await rejectsWith(t.api.createSandbox({ name: 'taken' }), 'already_exists', /taken/);
    await rejectsWith(t.api.createSandbox({ name: '-bad' }), 'invalid_argument', /name/);
    await rejectsWith(t.api.createSandbox({ env: { 'A-B': 'x' } }), 'invalid_argument', /A-B/);
    await rejectsWith(t.api.createSandbox({ image: 'nope' }), 'not_found', /nope/);
    assert.equal(t.store.listSandboxes().length, 1);
    // A dead sandbox's name can be used again.
    await t.api.killSandbox('taken');
    const again = await t.api.createSandbox({ name: 'taken' });
    assert.equal((await t.api.getSandbox('taken')).id, again.id);
  });

  it('a create the runtime fails is recorded as failed with the reason', async () => {
    t.runtime.failNext('doomed', 'no room on the host');
    await rejectsWith(t.api.createSandbox({ name: 'doomed' }), 'unavailable', /no room/);
    const rec = t.store.listSandboxes().find((r) => r.name === 'doomed');
    assert.equal(rec?.state, 'failed');
    assert.match(rec?.endReason ?? '', /no room/);
    assert.deepEqual(await t.api.listSandboxes(), [], 'failed sandboxes are not listed as live');
    assert.equal((await t.api.listSandboxes({ all: true })).length, 1);
  });

  it('pause, resume and kill follow the state machine', async () => {
    const s = await t.api.createSandbox({ name: 'sm' });
    assert.equal((await t.api.pauseSandbox('sm')).state, 'paused');
    await rejectsWith(t.api.exec('sm', { argv: ['true'] }), 'conflict', /paused.*resume/);
    await rejectsWith(t.api.pauseSandbox('sm'), 'conflict');
    assert.equal((await t.api.resumeSandbox('sm')).state, 'running');
    assert.equal((await t.api.resumeSandbox('sm')).state, 'running', 'resuming a running sandbox is a no-op');
    const killed = await t.api.killSandbox('sm');
    assert.equal(killed.state, 'killed');
    assert.equal(killed.endReason, 'killed on request');
    assert.equal((await t.api.killSandbox(s.id)).state, 'killed', 'killing twice is harmless');
    await rejectsWith(t.api.resumeSandbox('sm'), 'conflict', /killed/);
    await rejectsWith(t.api.exec(s.id, { argv: ['true'] }), 'conflict', /killed/);
    assert.equal(t.runtime.sandboxes.has(s.id), false, 'the runtime released it');
  });

  it('kill of a paused sandbox works; get with usage asks the runtime', async () => {
    const s = await t.api.createSandbox({});
    await t.api.writeFile(s.id, '/tmp/f', Buffer.alloc(1000));
    const u = await t.api.getSandbox(s.id, { usage: true });
    assert.ok(u.usage && u.usage.diskBytes >= 1000);
    await t.api.pauseSandbox(s.id);
    assert.equal((await t.api.killSandbox(s.id)).state, 'killed');
    assert.equal((await t.api.getSandbox(s.id, { usage: true })).usage, undefined, 'no usage once killed');
  });

  it('extend sets a new TTL from now, only for live sandboxes, within bounds', async () => {
    const s = await t.api.createSandbox({ ttlSeconds: 60 });
    const before = Date.now();
    const e = await t.api.extendSandbox(s.id, 3600);
    assert.ok(Date.parse(e.expiresAt ?? '') >= before + 3600_000);
    assert.ok(Date.parse(e.expiresAt ?? '') <= Date.now() + 3600_000);
    await rejectsWith(t.api.extendSandbox(s.id, 0), 'invalid_argument', /ttl/);
    await t.api.killSandbox(s.id);
    await rejectsWith(t.api.extendSandbox(s.id, 60), 'conflict', /killed/);
  });

  it('lists live sandboxes by label; status counts states', async () => {
    await t.api.createSandbox({ name: 'x', labels: { team: 'a' } });
    await t.api.createSandbox({ name: 'y', labels: { team: 'b' } });
    const z = await t.api.createSandbox({ name: 'z', labels: { team: 'a' } });
    await t.api.killSandbox(z.id);
    assert.deepEqual(
      (await t.api.listSandboxes({ labels: { team: 'a' } })).map((s) => s.name),
      ['x'],
    );
    assert.deepEqual(
      (await t.api.listSandboxes({ all: true, labels: { team: 'a' } })).map((s) => s.name).sort(),
      ['x', 'z'],
    );
    const st = await t.api.status();
    assert.deepEqual(st.sandboxes, { running: 2, killed: 1 });
    assert.equal(st.runtime, 'fake');
  });

  it('an image in use by a live sandbox cannot be removed', async () => {
    const s = await t.api.createSandbox({});
    await rejectsWith(t.api.removeImage('debian'), 'conflict', new RegExp(s.id));
    await t.api.killSandbox(s.id);
    await t.api.removeImage('debian');
    assert.deepEqual(await t.api.listImages(), []);
  });
});
