/**
 * The MCP HTTP session table (http-sessions.ts) on a fake clock: only live sessions count toward the
 * per-tenant limit, idle ones are closed to make room (least recently used first) or by the sweep, a
 * refusal says which limit and when a slot frees, and the table as a whole stays bounded.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  createSessionTable,
  DEFAULT_SESSION_LIMITS,
  type TableEntry,
} from '../../src/protocol/mcp/http/http-sessions.ts';

function harness(limits = {}) {
  let t = 1_000_000;
  const closed: string[] = [];
  const table = createSessionTable<TableEntry & { sid: string }>(
    { ...DEFAULT_SESSION_LIMITS, maxPerTenant: 2, maxTotal: 4, ...limits },
    () => t,
  );
  const open = (sid: string, tenant = 'alice') => {
    const admitted = table.admit(tenant);
    if (!admitted.ok) return admitted;
    const e = {
      sid,
      tenant,
      lastSeen: t,
      active: 0,
      async close() {
        closed.push(sid);
      },
    };
    table.set(sid, e);
    return admitted;
  };
  return { table, closed, open, advance: (ms: number) => (t += ms), now: () => t };
}

describe('MCP HTTP session table', () => {
  it('refuses a session only when the tenant has the limit of live ones, saying when one frees', () => {
    const h = harness();
    assert.ok(h.open('a1').ok);
    h.advance(10_000);
    assert.ok(h.open('a2').ok);
    const r = h.open('a3');
    assert.equal(r.ok, false);
    if (r.ok) return;
    assert.equal(r.limit, 2);
    assert.equal(r.live, 2);
    assert.equal(r.retryAfterS, 50, 'a1 goes quiet 60 s after its last request, 50 s from now');
    assert.match(r.message, /limit is 2 live sessions per tenant.*frees in about 50 s.*DELETE \/mcp/);
    assert.ok(h.open('b1', 'bob').ok, 'other tenants are not affected');
  });

  it('closes the least recently used idle session to make room; an open stream keeps one live', () => {
    const h = harness();
    h.open('a1');
    h.advance(1000);
    h.open('a2');
    const a1 = h.table.get('a1');
    assert.ok(a1);
    a1.active = 1; // a GET stream or a long call is open
    h.advance(120_000);
    assert.ok(h.open('a3').ok);
    assert.deepEqual(h.closed, ['a2'], 'the idle one went, not the one with a stream open');
    assert.equal(h.table.get('a2'), undefined);
  });

  it('the sweep closes sessions idle for idleMs, never one with a request open', () => {
    const h = harness({ idleMs: 600_000 });
    h.open('a1');
    h.open('b1', 'bob');
    const b1 = h.table.get('b1');
    assert.ok(b1);
    b1.active = 1;
    h.advance(600_001);
    h.table.sweep();
    assert.deepEqual(h.closed, ['a1']);
    assert.equal(h.table.size(), 1);
  });

  it('bounds the whole table, evicting idle sessions of any tenant first', () => {
    const h = harness({ maxPerTenant: 10, maxTotal: 3 });
    h.open('a1');
    h.open('b1', 'bob');
    h.open('c1', 'carol');
    const r = h.open('d1', 'dave');
    assert.equal(r.ok, false, 'all three are live');
    h.advance(61_000);
    assert.ok(h.open('d1', 'dave').ok);
    assert.equal(h.table.size(), 3);
    assert.deepEqual(h.closed, ['a1']);
  });
});
