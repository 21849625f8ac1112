/**
 * diff-pages.ts: a diff answers at most `limit` entries at a time, over added, removed, modified and renamed
 * in that order, with the whole diff's counts and a cursor for the rest; cursors are the tenant's own,
 * expire, and at most two diffs per tenant are kept for them.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DiffResult } from '../../src/service/api.ts';
import { createDiffPages, DIFF_CURSOR_TTL_MS, DIFF_PAGE_MAX } from '../../src/service/diff/diff-pages.ts';

const entries = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({ path: `/${prefix}${i}`, type: 'file' as const }));

function diff(added: number, removed: number, modified: number, renamed?: number): DiffResult {
  return {
    a: 'sb-a',
    b: 'sb-b',
    base: null,
    added: entries('add', added),
    removed: entries('rm', removed),
    modified: entries('mod', modified),
    ...(renamed === undefined
      ? {}
      : { renamed: Array.from({ length: renamed }, (_, i) => ({ from: `/o${i}`, to: `/n${i}` })) }),
    truncated: false,
    unified: '--- a\n+++ b\n',
  } as unknown as DiffResult;
}

const paths = (d: DiffResult) => [
  ...d.added.map((e) => e.path),
  ...d.removed.map((e) => e.path),
  ...d.modified.map((e) => e.path),
  ...(d.renamed ?? []).map((r) => r.to),
];

describe('a diff in pages', () => {
  it('pages over the kinds in order, each entry once, with the counts and the unified text on the first', async () => {
    const pages = createDiffPages();
    const whole = diff(12, 7, 4, 2);
    const want = paths(whole);
    const first = await pages.first('t1', 10, async () => diff(12, 7, 4, 2));
    assert.deepEqual(first.counts, { added: 12, removed: 7, modified: 4, renamed: 2 });
    assert.equal(first.added.length, 10);
    assert.equal(first.unified, '--- a\n+++ b\n');
    const seen = paths(first);
    let cursor = first.nextCursor ?? null;
    let n = 1;
    while (cursor !== null) {
      const p = pages.next('t1', cursor, 10);
      assert.equal(p.unified, undefined, 'the unified text comes once');
      assert.equal(p.a, 'sb-a');
      seen.push(...paths(p));
      cursor = p.nextCursor ?? null;
      n++;
    }
    assert.equal(n, 3);
    assert.deepEqual(seen, want);
  });

  it('answers a small diff whole, with no cursor', async () => {
    const d = await createDiffPages().first('t1', undefined, async () => diff(3, 0, 1));
    assert.equal(d.nextCursor, null);
    assert.deepEqual(d.counts, { added: 3, removed: 0, modified: 1, renamed: 0 });
    assert.equal(d.added.length, 3);
  });

  it("refuses another tenant's cursor, a used-up one and a made-up one alike", async () => {
    const pages = createDiffPages();
    const first = await pages.first('t1', 5, async () => diff(8, 0, 0));
    const cursor = first.nextCursor ?? '';
    assert.throws(() => pages.next('t2', cursor, 5), {
      code: 'invalid_argument',
      message: /unknown or expired/,
    });
    const last = pages.next('t1', cursor, 5);
    assert.equal(last.nextCursor, null);
    assert.throws(() => pages.next('t1', cursor, 5), /unknown or expired/);
    assert.throws(() => pages.next('t1', 'nonsense', 5), /unknown or expired/);
  });

  it('keeps two diffs per tenant and forgets them after the TTL', async () => {
    let t = 0;
    const pages = createDiffPages(() => t);
    const cursors: string[] = [];
    for (let i = 0; i < 3; i++) {
      t += 1;
      cursors.push((await pages.first('t1', 1, async () => diff(3, 0, 0))).nextCursor ?? '');
    }
    const other = (await pages.first('t2', 1, async () => diff(3, 0, 0))).nextCursor ?? '';
    assert.throws(() => pages.next('t1', cursors[0] ?? '', 1), /unknown or expired/, 'the oldest went');
    pages.next('t1', cursors[1] ?? '', 1);
    pages.next('t1', cursors[2] ?? '', 1);
    pages.next('t2', other, 1);
    t += DIFF_CURSOR_TTL_MS + 1;
    assert.throws(() => pages.next('t2', other, 1), /unknown or expired/);
  });

  it('bounds the page size', async () => {
    const pages = createDiffPages();
    for (const limit of [0, -1, 1.5, DIFF_PAGE_MAX + 1]) {
      await assert.rejects(
        pages.first('t1', limit, async () => diff(1, 0, 0)),
        { code: 'invalid_argument' },
      );
    }
  });
});
