/**
 * diffLayerChains over hand-built overlay layers (whiteouts, opaque dirs, type changes, symlinks that
 * must never be followed) and the unified text diff. Whiteouts (mknod) and trusted.* xattrs need root:
 * those cases skip visibly without it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { diffLayerChains, relOf } from '../../src/runtimes/native/layers/layer-diff.ts';
import { openRegular, sha256Of } from '../../src/runtimes/native/layers/layer-walk.ts';
import { unifiedDiff } from '../../src/service/diff/diff.ts';
import type { DiffEntry } from '../../src/service/ports.ts';

const isRoot = process.getuid?.() === 0;
const rootOnly = isRoot ? false : 'needs root (whiteout device nodes and trusted.* xattrs)';

function put(root: string, rel: string, content: string): void {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), content);
}
function whiteout(root: string, rel: string): void {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  const r = spawnSync('mknod', [join(root, rel), 'c', '0', '0']);
  assert.equal(r.status, 0, r.stderr.toString());
}
function opaque(root: string, rel: string): void {
  mkdirSync(join(root, rel), { recursive: true });
  const r = spawnSync('setfattr', ['-n', 'trusted.overlay.opaque', '-v', 'y', join(root, rel)]);
  assert.equal(r.status, 0, r.stderr.toString());
}
const paths = (es: DiffEntry[]) => es.map((e) => e.path);
const byPath = (es: DiffEntry[], p: string) => es.find((e) => e.path === p);

describe('diffLayerChains', { skip: rootOnly }, () => {
  let tmp: string;
  let base: string;
  let upA: string;
  let upB: string;
  let outside: string;

  before(() => {
    tmp = mkdtempSync(join(tmpdir(), 'layer-diff-'));
    base = join(tmp, 'base');
    upA = join(tmp, 'upA');
    upB = join(tmp, 'upB');
    outside = join(tmp, 'outside');
    // The common layer.
    put(base, 'etc/passwd', 'root:x:0:0\n');
    put(base, 'work/keep.txt', 'keep\n');
    put(base, 'work/same.txt', 'line1\naaaa\nline3\n');
    put(base, 'work/gone.txt', 'bye\n');
    put(base, 'opq/x', 'x');
    put(base, 'opq/y', 'y');
    put(base, 't', 'was a file');
    put(base, 'w/f', 'public');
    put(base, 'gonedir/a', 'a');
    put(base, 'gonedir/sub/b', 'b');
    // Outside every layer: must never be read through a symlink.
    put(outside, 'f', 'SECRET-OUTSIDE');
    // A: modifies same.txt (same size), adds new.txt, copies keep.txt up unchanged, chmods passwd,
    // and makes w a symlink to a directory outside the layers.
    put(upA, 'work/same.txt', 'line1\nbbbb\nline3\n');
    put(upA, 'work/new.txt', 'new in A\n');
    put(upA, 'work/keep.txt', 'keep\n');
    put(upA, 'etc/passwd', 'root:x:0:0\n');
    chmodSync(join(upA, 'etc/passwd'), 0o600);
    symlinkSync(outside, join(upA, 'w'));
    // B: deletes gone.txt and gonedir, makes opq opaque with only z, turns t into a dir, adds a
    // symlink to /etc/shadow.
    whiteout(upB, 'work/gone.txt');
    whiteout(upB, 'gonedir');
    opaque(upB, 'opq');
    put(upB, 'opq/z', 'z');
    put(upB, 't/inner', 'inner');
    symlinkSync('/etc/shadow', join(upB, 'secret'));
  });
  after(() => {
    rmSync(tmp, { recursive: true, force: true });
  });

  it('reports added, removed and modified paths down to the common layer', async () => {
    const d = await diffLayerChains({ upper: upA, lowers: [base] }, { upper: upB, lowers: [base] });
    assert.equal(d.base, basename(base));
    assert.equal(d.truncated, false);
    assert.deepEqual(paths(d.added), ['/opq/z', '/secret', '/t/inner', '/w/f']);
    assert.deepEqual(paths(d.removed), [
      '/gonedir',
      '/gonedir/a',
      '/gonedir/sub',
      '/gonedir/sub/b',
      '/opq/x',
      '/opq/y',
      '/work/gone.txt',
      '/work/new.txt',
    ]);
    assert.deepEqual(paths(d.modified), ['/etc/passwd', '/t', '/w', '/work/same.txt']);
    const same = byPath(d.modified, '/work/same.txt');
    assert.deepEqual(same?.changes, ['content']);
    assert.equal(same?.a?.size, same?.b?.size);
    assert.match(same?.a?.sha256 ?? '', /^[0-9a-f]{64}$/);
    assert.notEqual(same?.a?.sha256, same?.b?.sha256);
    assert.deepEqual(byPath(d.modified, '/etc/passwd')?.changes, ['mode']);
    assert.equal(byPath(d.modified, '/etc/passwd')?.a?.mode, 0o600);
    assert.deepEqual(byPath(d.modified, '/t')?.changes, ['type']);
    assert.equal(byPath(d.modified, '/t')?.a?.type, 'file');
    assert.equal(byPath(d.modified, '/t')?.b?.type, 'dir');
    assert.equal(byPath(d.modified, '/w')?.a?.type, 'symlink');
    assert.equal(byPath(d.removed, '/work/new.txt')?.a?.size, 'new in A\n'.length);
    // Symlinks are reported with their own text, never followed or hashed.
    const secret = byPath(d.added, '/secret');
    assert.deepEqual(secret?.b, {
      type: 'symlink',
      size: '/etc/shadow'.length,
      mode: 0o777,
      linkTarget: '/etc/shadow',
    });
    // Copied up with the same content: not a change.
    assert.equal(byPath(d.modified, '/work/keep.txt'), undefined);
  });

  it('is symmetric: swapping the sides swaps added and removed', async () => {
    const d = await diffLayerChains({ upper: upB, lowers: [base] }, { upper: upA, lowers: [base] });
    assert.deepEqual(paths(d.removed), ['/opq/z', '/secret', '/t/inner', '/w/f']);
    assert.equal(d.added.length, 8);
  });

  it('filters by path prefix', async () => {
    const d = await diffLayerChains(
      { upper: upA, lowers: [base] },
      { upper: upB, lowers: [base] },
      { paths: ['/work/', '/opq/z'] },
    );
    assert.deepEqual(paths(d.added), ['/opq/z']);
    assert.deepEqual(paths(d.removed), ['/work/gone.txt', '/work/new.txt']);
    assert.deepEqual(paths(d.modified), ['/work/same.txt']);
  });

  it('gives a unified diff of a modified text file', async () => {
    const d = await diffLayerChains(
      { upper: upA, lowers: [base] },
      { upper: upB, lowers: [base] },
      { unifiedFor: '/work/same.txt' },
    );
    assert.equal(
      d.unified,
      '--- a/work/same.txt\n+++ b/work/same.txt\n@@ -1,3 +1,3 @@\n line1\n-bbbb\n+aaaa\n line3\n',
    );
  });

  it('never reads through a symlink for a unified diff', async () => {
    const viaLink = await diffLayerChains(
      { upper: upA, lowers: [base] },
      { upper: upB, lowers: [base] },
      { unifiedFor: '/w/f' },
    );
    assert.doesNotMatch(viaLink.unified ?? '', /SECRET/);
    assert.match(viaLink.unified ?? '', /^--- \/dev\/null\n\+\+\+ b\/w\/f\n@@ -0,0 \+1 @@\n\+public\n/);
    const shadow = await diffLayerChains(
      { upper: upA, lowers: [base] },
      { upper: upB, lowers: [base] },
      { unifiedFor: '/secret' },
    );
    assert.equal(shadow.unified, '/secret in B is a symlink, not a regular file\n');
  });

  it('compares full views when the chains share no layer', async () => {
    const base2 = join(tmp, 'base-copy');
    assert.equal(spawnSync('cp', ['-a', base, base2]).status, 0);
    try {
      const d = await diffLayerChains({ upper: upA, lowers: [base] }, { upper: upB, lowers: [base2] });
      assert.equal(d.base, null);
      assert.deepEqual(paths(d.added), ['/opq/z', '/secret', '/t/inner', '/w/f']);
      assert.equal(d.removed.length, 8);
      assert.deepEqual(paths(d.modified), ['/etc/passwd', '/t', '/w', '/work/same.txt']);
    } finally {
      rmSync(base2, { recursive: true, force: true });
    }
  });

  it('says truncated when the entry bound is reached', async () => {
    const d = await diffLayerChains(
      { upper: upA, lowers: [base] },
      { upper: upB, lowers: [base] },
      { maxEntries: 3 },
    );
    assert.equal(d.truncated, true);
  });

  it('honours opaque dirs and whiteouts inside the common layers', async () => {
    const mid = join(tmp, 'mid');
    const up1 = join(tmp, 'up1');
    const up2 = join(tmp, 'up2');
    opaque(mid, 'opq');
    put(mid, 'opq/m', 'm');
    whiteout(mid, 'work/keep.txt');
    put(up1, 'opq/new', 'n');
    whiteout(up2, 'opq');
    mkdirSync(up2, { recursive: true });
    try {
      const d = await diffLayerChains(
        { upper: up1, lowers: [mid, base] },
        { upper: up2, lowers: [mid, base] },
      );
      assert.equal(d.base, 'mid');
      // opq/x and opq/y are hidden in both views by mid's opaque opq; keep.txt by mid's whiteout.
      assert.deepEqual(paths(d.removed), ['/opq', '/opq/m', '/opq/new']);
      assert.deepEqual(d.added, []);
      assert.deepEqual(d.modified, []);
    } finally {
      for (const p of [mid, up1, up2]) rmSync(p, { recursive: true, force: true });
    }
  });

  it('finds nothing between a chain and itself', async () => {
    const d = await diffLayerChains({ upper: upA, lowers: [base] }, { upper: upA, lowers: [base] });
    assert.deepEqual([d.added, d.removed, d.modified], [[], [], []]);
  });
});

describe('openRegular (reading inside a layer)', () => {
  it('opens regular files only, never through or at a symlink, and never opens a FIFO', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'layer-open-'));
    try {
      const layer = join(tmp, 'layer');
      put(layer, 'dir/ok.txt', 'fine');
      put(tmp, 'outside/secret', 'SECRET');
      symlinkSync(join(tmp, 'outside'), join(layer, 'dirlink'));
      symlinkSync(join(tmp, 'outside/secret'), join(layer, 'filelink'));
      assert.equal(spawnSync('mkfifo', [join(layer, 'fifo')]).status, 0);
      const fh = await openRegular(layer, 'dir/ok.txt');
      assert.ok(fh);
      assert.equal((await fh.readFile()).toString(), 'fine');
      await fh.close();
      assert.equal(await openRegular(layer, 'dirlink/secret'), null);
      assert.equal(await openRegular(layer, 'filelink'), null);
      // A FIFO would block a plain open() forever; O_PATH never opens it.
      assert.equal(await openRegular(layer, 'fifo'), null);
      assert.equal(await openRegular(layer, 'dir'), null);
      assert.equal(await openRegular(layer, '../outside/secret'), null);
      assert.equal(await sha256Of(layer, 'dirlink/secret'), null);
      assert.match((await sha256Of(layer, 'dir/ok.txt')) ?? '', /^[0-9a-f]{64}$/);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

describe('relOf', () => {
  it('normalises and cannot climb out of the root', () => {
    assert.equal(relOf('/'), '');
    assert.equal(relOf('/work/x/'), 'work/x');
    assert.equal(relOf('work//x'), 'work/x');
    assert.equal(relOf('/../../etc/shadow'), 'etc/shadow');
  });
});

/** Apply a unified diff produced by unifiedDiff to `old` (a check that its hunks are right). */
function applyPatch(old: string, patch: string): string {
  const oldLines = old === '' ? [] : old.replace(/\n$/, '').split('\n');
  const out: string[] = [];
  let at = 0;
  const lines = patch.split('\n').slice(2);
  for (let i = 0; i < lines.length; i++) {
    const m = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@$/.exec(lines[i] ?? '');
    if (!m) continue;
    const start = Number(m[1]) - (m[2] === '0' ? 0 : 1);
    while (at < start) out.push(oldLines[at++] as string);
    for (i++; i < lines.length && !(lines[i] ?? '').startsWith('@@'); i++) {
      const l = lines[i] as string;
      if (l.startsWith(' ')) {
        assert.equal(oldLines[at], l.slice(1));
        out.push(l.slice(1));
        at++;
      } else if (l.startsWith('-')) {
        assert.equal(oldLines[at], l.slice(1));
        at++;
      } else if (l.startsWith('+')) out.push(l.slice(1));
    }
    i--;
  }
  while (at < oldLines.length) out.push(oldLines[at++] as string);
  return out.length === 0 ? '' : `${out.join('\n')}\n`;
}

describe('unifiedDiff', () => {
  it('is empty for equal texts', () => {
    assert.equal(unifiedDiff('a\nb\n', 'a\nb\n', { old: 'a/x', new: 'b/x' }), '');
  });

  it('matches GNU diff -u on a simple case', (t: TestContext) => {
    const a = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n';
    const b = 'one\n2\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\n';
    const mine = unifiedDiff(a, b, { old: 'a/x', new: 'b/x' });
    const dir = mkdtempSync(join(tmpdir(), 'udiff-'));
    try {
      writeFileSync(join(dir, 'a'), a);
      writeFileSync(join(dir, 'b'), b);
      const r = spawnSync('diff', ['-u', join(dir, 'a'), join(dir, 'b')], { encoding: 'utf8' });
      if (r.error) {
        t.skip('GNU diff is not installed');
        return;
      }
      assert.equal(mine.split('\n').slice(2).join('\n'), r.stdout.split('\n').slice(2).join('\n'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('marks a missing final newline', () => {
    assert.equal(
      unifiedDiff('a\nb', 'a\nb\n', { old: 'a/x', new: 'b/x' }),
      '--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n',
    );
  });

  it('produces hunks that turn the old text into the new one (random edits)', () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let round = 0; round < 200; round++) {
      const a = Array.from({ length: rnd(40) }, () => `l${rnd(8)}`);
      const b = a.flatMap((l) => {
        const r = rnd(10);
        if (r === 0) return [];
        if (r === 1) return [l, `n${rnd(8)}`];
        if (r === 2) return [`c${rnd(8)}`];
        return [l];
      });
      const ta = a.length ? `${a.join('\n')}\n` : '';
      const tb = b.length ? `${b.join('\n')}\n` : '';
      const patch = unifiedDiff(ta, tb, { old: 'a', new: 'b' });
      assert.equal(patch === '' ? ta : applyPatch(ta, patch), tb, `round ${round}`);
    }
  });

  it('falls back to one replacement block past the edit bound, still correct', () => {
    const a = `${Array.from({ length: 50 }, (_, i) => `a${i}`).join('\n')}\n`;
    const b = `${Array.from({ length: 50 }, (_, i) => `b${i}`).join('\n')}`;
    const patch = unifiedDiff(a, b, { old: 'a/x', new: 'b/x' }, 3, 5);
    const lines = patch.split('\n');
    assert.equal(lines.filter((l) => l.startsWith('@@')).length, 1, patch);
    assert.equal(lines[2], '@@ -1,50 +1,50 @@');
    assert.equal(lines.filter((l) => /^-a\d/.test(l)).length, 50);
    assert.equal(lines.filter((l) => /^\+b\d/.test(l)).length, 50);
    assert.equal(applyPatch(a, patch), `${b}\n`); // (applyPatch does not model the missing newline)
    assert.equal(unifiedDiff('', 'x\n', { old: 'a', new: 'b' }, 3, 0), '--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n');
  });
});
