/**
 * No caller stalls the daemon for the others (issue #22 item 4, in part): a tenant's heavy calls (diffs)
 * are capped at a few at once, the next refused at once while other tenants go on; and the CLI renders a
 * diff of 300,000 paths (its table once spread every row into Math.max: "Maximum call stack size exceeded").
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { table } from '../../src/cli/output/output.ts';
import { createHeavyCalls, HEAVY_CALLS_PER_TENANT } from '../../src/service/diff/heavy-calls.ts';
import { rejectsWith } from '../helpers/assert-error.ts';

describe('heavy calls per tenant', () => {
  it(`runs ${HEAVY_CALLS_PER_TENANT} of a tenant's at once, refuses the next, and frees the slot when one ends`, async () => {
    const heavy = createHeavyCalls();
    const gates: (() => void)[] = [];
    const held = () => new Promise<string>((r) => gates.push(() => r('done')));
    const running = Array.from({ length: HEAVY_CALLS_PER_TENANT }, () => heavy.run('a', 'diff', held));
    await rejectsWith(
      heavy.run('a', 'diff', held),
      'resource_exhausted',
      /diff refused: 2 of this tenant's diffs are running/,
    );
    // Another tenant is not held back by the first one's calls.
    const other = heavy.run('b', 'diff', async () => 'b ran');
    assert.equal(await other, 'b ran');
    gates.shift()?.();
    assert.equal(await running[0], 'done');
    const again = heavy.run('a', 'diff', async () => 'a again');
    assert.equal(await again, 'a again');
    for (const g of gates) g();
    await Promise.all(running);
  });

  it('a failing call gives its slot back', async () => {
    const heavy = createHeavyCalls(1);
    await assert.rejects(
      heavy.run('a', 'diff', async () => Promise.reject(new Error('walk failed'))),
      /walk failed/,
    );
    assert.equal(await heavy.run('a', 'diff', async () => 'ok'), 'ok');
  });
});

describe('the CLI renders big tables', () => {
  it('a table of 300,000 rows', () => {
    const rows = Array.from({ length: 300_000 }, (_, i) => ['D', `/f/${i}`, '0', '']);
    const out = table(['', 'path', 'size', ''], rows);
    assert.equal(out.split('\n').length, 300_001);
    assert.match(out.split('\n')[1] ?? '', /^D {2}\/f\/0 {7,}0$/);
  });
});
