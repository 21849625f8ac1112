/**
 * Diffs run in worker threads (runtimes/native/layers/diff-workers.ts): the same answer as the in-process
 * diff, errors that keep their code, a worker that dies failing only its own job, and shutdown failing
 * what still waits. Real worker threads over real directories.
 */
import assert from 'node:assert/strict';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isForkboxError } from '../../src/domain/errors.ts';
import { createDiffWorkers } from '../../src/runtimes/native/layers/diff-workers.ts';
import { diffLayerChains } from '../../src/runtimes/native/layers/layer-diff.ts';
import type { LayerChain } from '../../src/service/ports.ts';

describe('diff workers', () => {
  let tmp: string;
  let base: string;
  let upA: string;
  let upB: string;

  before(() => {
    tmp = mkdtempSync(join(tmpdir(), 'diff-workers-'));
    base = join(tmp, 'base');
    upA = join(tmp, 'upA');
    upB = join(tmp, 'upB');
    for (const d of [base, upA, join(upB, 'many')]) mkdirSync(d, { recursive: true });
    writeFileSync(join(base, 'same'), 'same');
    writeFileSync(join(upA, 'changed'), 'one\n');
    writeFileSync(join(upB, 'changed'), 'two\n');
    for (let i = 0; i < 3000; i++) writeFileSync(join(upB, 'many', `f${i}`), '');
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  const chains = (): [LayerChain, LayerChain] => [
    { upper: upA, lowers: [base] },
    { upper: upB, lowers: [base] },
  ];

  it('answers what the in-process diff answers, several at once', async () => {
    const w = createDiffWorkers({ size: 2 });
    try {
      const [a, b] = chains();
      const want = await diffLayerChains(a, b, { unifiedFor: '/changed' });
      const got = await Promise.all([1, 2, 3, 4, 5].map(() => w.diff(a, b, { unifiedFor: '/changed' })));
      for (const g of got) assert.deepEqual(g, want);
      assert.equal(want.added.length, 3001); // many/ and its files
      assert.deepEqual(
        want.modified.map((e) => e.path),
        ['/changed'],
      );
      assert.match(want.unified ?? '', /-one\n\+two/);
    } finally {
      await w.close();
    }
  });

  it('keeps the budget: a bounded diff is marked truncated', async () => {
    const w = createDiffWorkers({ size: 1 });
    try {
      const [a, b] = chains();
      const d = await w.diff(a, b, { maxEntries: 100 });
      assert.equal(d.truncated, true);
      assert.ok(d.added.length <= 100, String(d.added.length));
    } finally {
      await w.close();
    }
  });

  it('passes an error back with its code, and goes on answering', async () => {
    const w = createDiffWorkers({ size: 1 });
    try {
      await assert.rejects(
        w.diff({ upper: join(tmp, 'no-such-layer'), lowers: [] }, { upper: upB, lowers: [] }),
        (e: unknown) => isForkboxError(e) && e.code === 'not_found' && /no-such-layer/.test(e.message),
      );
      const [a, b] = chains();
      assert.equal((await w.diff(a, b)).modified.length, 1);
    } finally {
      await w.close();
    }
  });

  it('fails the job of a worker that dies, not the pool', async () => {
    // A heap limit far below what a worker needs to start: each worker dies at once.
    const starved = createDiffWorkers({ size: 1, heapMb: 1 });
    const [a, b] = chains();
    try {
      await assert.rejects(
        starved.diff(a, b),
        (e: unknown) =>
          isForkboxError(e) && e.code === 'resource_exhausted' && /the diff stopped/.test(e.message),
      );
      // The next job gets a new worker (and dies the same way: the pool did not wedge).
      await assert.rejects(starved.diff(a, b), /the diff stopped/);
    } finally {
      await starved.close();
    }
  });

  it('stops a diff past its deadline, and the next diff gets a new worker', async () => {
    // Two sparse files of one size that differ at the end: hashing them reads all of it.
    const big = join(tmp, 'big');
    const bigA = join(big, 'a');
    const bigB = join(big, 'b');
    mkdirSync(bigA, { recursive: true });
    mkdirSync(bigB, { recursive: true });
    for (const [dir, last] of [
      [bigA, 'a'],
      [bigB, 'b'],
    ] as const) {
      const f = join(dir, 'huge');
      writeFileSync(f, '');
      truncateSync(f, 64 * 1024 ** 3);
      const fd = openSync(f, 'r+');
      writeSync(fd, last, 64 * 1024 ** 3 - 1);
      closeSync(fd);
    }
    const w = createDiffWorkers({ size: 1, deadlineMs: 3000 });
    try {
      const t0 = Date.now();
      await assert.rejects(
        w.diff({ upper: bigA, lowers: [] }, { upper: bigB, lowers: [] }),
        (e: unknown) =>
          isForkboxError(e) && e.code === 'resource_exhausted' && /ran past its 3 s/.test(e.message),
      );
      assert.ok(Date.now() - t0 < 30_000, 'stopped near its deadline, not when the hashing ended');
      const [a, b] = chains();
      assert.equal((await w.diff(a, b)).modified.length, 1);
    } finally {
      await w.close();
    }
  });

  it('fails what still waits when closed, and refuses new diffs', async () => {
    const w = createDiffWorkers({ size: 1 });
    const [a, b] = chains();
    const jobs = [w.diff(a, b), w.diff(a, b), w.diff(a, b)].map((p) =>
      p.then(
        () => 'done',
        (e: unknown) => (isForkboxError(e) ? e.code : String(e)),
      ),
    );
    await w.close();
    const ends = await Promise.all(jobs);
    assert.ok(
      ends.every((e) => e === 'unavailable' || e === 'done'),
      ends.join(),
    );
    assert.ok(
      ends.slice(1).every((e) => e === 'unavailable'),
      ends.join(),
    );
    await assert.rejects(w.diff(a, b), (e: unknown) => isForkboxError(e) && e.code === 'unavailable');
  });
});
