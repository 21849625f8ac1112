/**
 * Templates per tenant and their host uid ranges (docs/SECURITY.md, "Sandboxes that share nothing"), on
 * the real runtime: two tenants' sandboxes come from two templates whose ranges and user namespace owners
 * differ; each unrelated sandbox has a block of its own and a fork shares its source's; the host-wide
 * registry holds each template's range while its PID 1 lives; an idle tenant template is stopped and its
 * range given back, while the host tenant's first template stays warm.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { NativeRuntime } from '../../src/runtimes/native/native-runtime.ts';
import {
  blockBase,
  type NativeFixture,
  nativeUnavailable,
  openNative,
  UID_SPACE_START,
} from '../helpers/native.ts';

const skip = nativeUnavailable();
const RANGE = 64 * 65536;

interface Registry {
  ranges: { start: number; template: string; pid: number }[];
}
const registry = (): Registry => JSON.parse(readFileSync('/run/forkbox-ids/ranges.json', 'utf8')) as Registry;

/** The owner of a process's user namespace's parent chain, as the host sees it: its uid_map. */
function uidMap(pid: number): string {
  return readFileSync(`/proc/${pid}/uid_map`, 'utf8').trim().split(/\s+/).join(' ');
}

describe('templates per tenant, blocks per sandbox, ranges host-wide', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let runtime: NativeRuntime;

  before(async () => {
    fx = await openNative();
    runtime = fx.opened.runtime as NativeRuntime;
  });
  after(async () => {
    await fx?.close();
  });

  const templateOf = (id: string) => runtime.live.get(id)?.templateId ?? '';

  it("two tenants' sandboxes: two templates, two ranges; two of one tenant: two blocks; a fork: its source's", async () => {
    const alice = fx.opened.engine.scoped({ tenant: 'alice' });
    const bob = fx.opened.engine.scoped({ tenant: 'bob' });
    const a1 = (await alice.createSandbox({})).id;
    const a2 = (await alice.createSandbox({})).id;
    const b1 = (await bob.createSandbox({})).id;
    assert.equal(templateOf(a1), templateOf(a2), "one tenant's sandboxes share its template");
    assert.notEqual(templateOf(a1), templateOf(b1), 'two tenants never share one');
    const [ba1, ba2, bb1] = [blockBase(fx, a1), blockBase(fx, a2), blockBase(fx, b1)];
    assert.notEqual(ba1, ba2);
    for (const b of [ba1, ba2, bb1]) assert.ok(b >= UID_SPACE_START && b % 65536 === 0, String(b));
    const rangeOf = (b: number) => Math.floor((b - UID_SPACE_START) / RANGE);
    assert.equal(rangeOf(ba1), rangeOf(ba2), "one template's blocks are in its range");
    assert.notEqual(rangeOf(ba1), rangeOf(bb1), "two tenants' ranges differ");
    const pid = runtime.live.get(a1)?.hostPid ?? 0;
    assert.equal(uidMap(pid), `0 ${ba1} 65536`, 'its PID 1 maps container 0.. to its block');

    const fork = await alice.forkSandbox(a1, { n: 2 });
    for (const c of fork.children) {
      assert.ok(c.ok, c.error?.message);
      assert.equal(blockBase(fx, c.sandbox?.id ?? ''), ba1, "a fork's children are on its source's block");
    }
    // The registry holds both templates' ranges, each with its PID 1 as holder.
    const starts = registry().ranges.filter((r) => [templateOf(a1), templateOf(b1)].includes(r.template));
    assert.equal(starts.length, 2, JSON.stringify(registry()));
    for (const r of starts)
      assert.ok(readFileSync(`/proc/${r.pid}/status`, 'utf8').length > 0, `holder ${r.pid}`);
    for (const id of [...fork.children.map((c) => c.sandbox?.id ?? ''), a1, a2, b1])
      await alice.killSandbox(id).catch(() => bob.killSandbox(id));
  });

  it("an idle tenant's template is stopped and its range given back; the host's first stays", async () => {
    const host = (await fx.opened.api.createSandbox({})).id;
    const hostTemplate = templateOf(host);
    await fx.opened.api.killSandbox(host);
    const carol = fx.opened.engine.scoped({ tenant: 'carol' });
    const c = (await carol.createSandbox({})).id;
    const carolTemplate = templateOf(c);
    await carol.killSandbox(c);
    assert.deepEqual(await runtime.reapIdleTemplates(), [], 'nothing is stopped the moment it is idle');
    const reaped = await runtime.reapIdleTemplates(Date.now() + 11 * 60_000);
    assert.ok(reaped.includes(carolTemplate), `carol's template stopped: ${reaped}`);
    assert.ok(!reaped.includes(hostTemplate), "the host's first template stays warm");
    assert.ok(!registry().ranges.some((r) => r.template === carolTemplate), 'its range is free again');
    // Carol's next create starts a template again.
    const again = (await carol.createSandbox({})).id;
    assert.notEqual(templateOf(again), carolTemplate);
    await carol.killSandbox(again);
  });
});
