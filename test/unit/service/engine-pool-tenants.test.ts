/**
 * The warm pool per tenant (service/warm-pool.ts): a sandbox is made from templates of its own tenant
 * (docs/SECURITY.md, "Sandboxes that share nothing"), so a pooled sandbox is made for one tenant and only
 * that tenant's creates take it; the host's own pools fill from the start, another tenant's once it
 * creates; metrics never name a tenant.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { createTestEngine, type TestEngine } from '../../helpers/test-engine.ts';
import { waitFor } from '../../helpers/wait-for.ts';

/** The group each runtime create of a sandbox id was made for. */
function groups(t: TestEngine): Map<string, string | undefined> {
  return new Map(t.runtime.calls.filter((c) => c.op === 'createSandbox').map((c) => [c.rid ?? '', c.group]));
}

describe('engine: the warm pool per tenant', () => {
  let t: TestEngine;
  beforeEach(async () => {
    t = createTestEngine({ poolSize: 1 });
    await t.engine.recover();
  });
  afterEach(() => t.close());

  const ready = (n: number) =>
    waitFor(() => (t.engine.poolStats()[0]?.size === n ? true : undefined), {
      what: `${n} pooled sandboxes`,
      timeoutMs: 5000,
      intervalMs: 10,
    });

  it("fills the host's pool at start and hands it to the host tenant only", async () => {
    await ready(1);
    const alice = t.scoped({ tenant: 'alice' });
    const a = await alice.createSandbox({});
    assert.equal(groups(t).get(a.id), 'alice', "alice's first create is made from her templates");
    const host = await t.api.createSandbox({});
    assert.equal(groups(t).get(host.id), 'default', 'the host took its own pooled sandbox');
  });

  it("a tenant's pool starts with its first create, and no other tenant takes from it", async () => {
    await ready(1);
    const alice = t.scoped({ tenant: 'alice' });
    const bob = t.scoped({ tenant: 'bob' });
    await alice.createSandbox({}); // a miss: starts alice's pool
    await ready(2);
    const b = await bob.createSandbox({});
    assert.equal(groups(t).get(b.id), 'bob', "bob's create never takes alice's pooled sandbox");
    const a2 = await alice.createSandbox({});
    assert.equal(groups(t).get(a2.id), 'alice');
    for (const s of await alice.listSandboxes({})) assert.equal(groups(t).get(s.id), 'alice');
    const stats = t.engine.poolStats();
    assert.deepEqual(
      stats.map((s) => Object.keys(s).sort()),
      [['hits', 'misses', 'size', 'target', 'template']],
      'one row per template: no tenant named',
    );
  });
});
