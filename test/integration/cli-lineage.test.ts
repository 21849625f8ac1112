/**
 * The CLI's lineage commands on the real thing — `bin/forkbox.js` against a real `forkbox serve` on a
 * fresh state dir: `fork` (files and live Python state into N children), `diff` (between two sandboxes'
 * layers), `merge` (a fork takes over its parent's id), and `snapshot create|ls|inspect|restore|rm`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type {
  DiffResult,
  ForkResult,
  MergeResult,
  SandboxInfo,
  SnapshotInfo,
} from '../../src/service/api.ts';
import { nativeUnavailable } from '../helpers/native.ts';
import { servedSuite } from '../helpers/served-suite.ts';

const skip = nativeUnavailable();

describe('CLI lineage commands against a real daemon', { skip: skip ?? false }, () => {
  const suite = servedSuite();
  const { cli } = suite;

  /** A sandbox with a file and a REPL variable: what a fork or a snapshot must carry. */
  function source(name: string): string {
    const { id } = cli.json<SandboxInfo>('create', '--name', name);
    cli.ok('exec', id, '--', 'sh', '-c', 'echo original > /root/data.txt');
    cli.ok('eval', id, 'answer = 41');
    return id;
  }

  it('fork: N children with the files and the live REPL state; the source is unchanged', () => {
    const src = source('fork-src');
    const r = cli.json<ForkResult>('fork', src, '-n', '2', '--name', 'kid-a', 'kid-b');
    assert.equal(r.source, src);
    assert.deepEqual(
      r.children.map((c) => [c.ok, c.sandbox?.name, c.sandbox?.parentId]),
      [
        [true, 'kid-a', src],
        [true, 'kid-b', src],
      ],
    );
    assert.equal(r.carried.pythonState, true);
    for (const kid of ['kid-a', 'kid-b']) {
      assert.equal(cli.ok('exec', kid, '--', 'cat', '/root/data.txt'), 'original\n');
      assert.match(cli.ok('eval', kid, 'answer + 1'), /^42$/m);
    }
    // Children diverge from each other and from the source.
    cli.ok('eval', 'kid-a', 'answer = 0');
    assert.match(cli.ok('eval', 'kid-b', 'answer'), /^41$/m);
    assert.match(cli.ok('eval', src, 'answer'), /^41$/m);
    // Human output: one child id per line on stdout, the pause and what was carried on stderr.
    const human = cli.run(['fork', src]);
    assert.equal(human.status, 0, human.stderr);
    assert.match(human.stdout, /^sb-[0-9a-f]+\n$/);
    assert.match(human.stderr, /paused .* files and Python state carried/);
    const kids = cli.json<SandboxInfo[]>('ls').filter((s) => s.parentId === src);
    assert.equal(kids.length, 3);
    assert.ok(kids.every((k) => k.depth === 1));
    assert.match(cli.fails(2, 'fork', src, '-n', '0'), /-n must be a whole number from 1 to 100/);
    cli.ok('kill', '--cascade', src);
  });

  it('diff: added, removed and modified files between a parent and its fork, and a unified diff', () => {
    const src = source('diff-src');
    cli.ok('exec', src, '--', 'sh', '-c', 'echo bye > /root/gone.txt');
    const [kid] = cli.json<ForkResult>('fork', src).children;
    const k = kid?.sandbox?.id ?? assert.fail('no child');
    cli.ok(
      'exec',
      k,
      '--',
      'sh',
      '-c',
      'echo changed > /root/data.txt; echo new > /root/new.txt; rm /root/gone.txt',
    );
    const d = cli.json<DiffResult>('diff', src, k, '--path', '/root');
    assert.deepEqual(
      d.added.map((e) => e.path),
      ['/root/new.txt'],
    );
    assert.deepEqual(
      d.removed.map((e) => e.path),
      ['/root/gone.txt'],
    );
    assert.deepEqual(
      d.modified.map((e) => e.path),
      ['/root/data.txt'],
    );
    const human = cli.ok('diff', src, k, '-p', '/root', '-u', '/root/data.txt');
    assert.match(human, /^A\s+\/root\/new\.txt/m);
    assert.match(human, /^D\s+\/root\/gone\.txt/m);
    assert.match(human, /^M\s+\/root\/data\.txt/m);
    assert.match(human, /^-original$/m);
    assert.match(human, /^\+changed$/m);
    assert.match(cli.ok('diff', src, src), /no differences between/);
    cli.ok('kill', '--cascade', src);
  });

  it('diff of 25,000 files: the daemon answers in pages, the CLI follows them all', async () => {
    const src = cli.json<SandboxInfo>('create', '--name', 'diff-big').id;
    cli.ok(
      'exec',
      src,
      '--',
      'python3',
      '-c',
      "import os\nos.makedirs('/root/many')\nfor i in range(25000): open(f'/root/many/{i}', 'w').close()",
    );
    const [kid] = cli.json<ForkResult>('fork', src).children;
    const k = kid?.sandbox?.id ?? assert.fail('no child');
    cli.ok('exec', k, '--', 'rm', '-rf', '/root/many');
    const d = cli.json<DiffResult>('diff', src, k, '--path', '/root/many');
    assert.equal(d.removed.length, 25_001, 'every path of every page, and the directory');
    assert.equal(new Set(d.removed.map((e) => e.path)).size, 25_001);
    assert.equal(d.nextCursor, null);
    assert.deepEqual(d.counts, { added: 0, removed: 25_001, modified: 0, renamed: 0 });
    // Over REST: one page of at most 10,000 and a cursor for the next; the cursor is the tenant's own.
    const post = async (body: unknown) => {
      const r = await fetch(`${suite.daemon.url}/v1/sandboxes/diff`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: (await r.json()) as DiffResult & { error?: { code: string } } };
    };
    const first = await post({ a: src, b: k, paths: ['/root/many'] });
    assert.equal(first.status, 200);
    assert.equal(first.body.removed.length, 10_000);
    assert.equal(first.body.counts?.removed, 25_001);
    assert.ok(first.body.nextCursor);
    const second = await post({ a: src, b: k, cursor: first.body.nextCursor, limit: 20_000 });
    assert.equal(second.body.removed.length, 15_001);
    assert.equal(second.body.nextCursor, null);
    const again = await post({ a: src, b: k, cursor: first.body.nextCursor });
    assert.equal(again.status, 400);
    assert.match(JSON.stringify(again.body), /unknown or expired/);
    cli.ok('kill', '--cascade', src);
  });

  it('merge: the fork takes over the parent’s id and name, its files and REPL', () => {
    const parent = source('merge-parent');
    const [kid] = cli.json<ForkResult>('fork', parent).children;
    const winner = kid?.sandbox?.id ?? assert.fail('no child');
    cli.ok('exec', winner, '--', 'sh', '-c', 'echo winner > /root/data.txt');
    cli.ok('eval', winner, 'answer = 99');
    const m = cli.json<MergeResult>('merge', parent, winner);
    assert.equal(m.sandbox.id, parent);
    assert.equal(m.sandbox.name, 'merge-parent');
    assert.equal(m.winner, winner);
    assert.equal(cli.ok('exec', 'merge-parent', '--', 'cat', '/root/data.txt'), 'winner\n');
    assert.match(cli.ok('eval', parent, 'answer'), /^99$/m);
    // The winner's old id is an alias of the parent's from now on.
    assert.equal(cli.json<SandboxInfo>('inspect', winner).id, parent);
    const other = source('not-a-kid');
    assert.match(cli.fails(2, 'merge', parent, other), /is not an ancestor of/);
    cli.ok('kill', '--cascade', parent);
    cli.ok('kill', other);
  });

  it('snapshot: create, ls, inspect, restore (files + REPL), rm refused while used, rm --cascade', () => {
    const src = source('snap-src');
    const s = cli.json<SnapshotInfo>('snapshot', 'create', src, '--name', 'before-change');
    assert.equal(s.name, 'before-change');
    assert.equal(s.source, src);
    assert.equal(s.pythonState, true);
    // The source goes on; the snapshot keeps what it was.
    cli.ok('exec', src, '--', 'sh', '-c', 'echo later > /root/data.txt');
    const listed = cli.json<SnapshotInfo[]>('snapshot', 'ls');
    assert.deepEqual(
      listed.map((x) => x.name),
      ['before-change'],
    );
    assert.match(cli.ok('snapshot', 'ls'), /^\S+\s+before-change\s+/m);
    assert.match(cli.ok('snapshot', 'inspect', 'before-change'), /^python state:\s+yes/m);

    const r = cli.json<ForkResult>('snapshot', 'restore', 'before-change', '-n', '2');
    const restored = r.children.map((c) => c.sandbox?.id ?? assert.fail(c.error?.message ?? 'no child'));
    assert.equal(restored.length, 2);
    for (const id of restored) {
      assert.equal(cli.ok('exec', id, '--', 'cat', '/root/data.txt'), 'original\n');
      assert.match(cli.ok('eval', id, 'answer'), /^41$/m);
    }
    assert.deepEqual(
      cli.json<SnapshotInfo>('snapshot', 'inspect', s.id).dependents.sort(),
      [...restored].sort(),
    );

    assert.match(cli.fails(4, 'snapshot', 'rm', 'before-change'), /used by 2 live sandbox/);
    const rm = cli.json<{ deleted: string; killed: string[] }>(
      'snapshot',
      'rm',
      'before-change',
      '--cascade',
    );
    assert.deepEqual(rm.killed.sort(), [...restored].sort());
    assert.deepEqual(cli.json<SnapshotInfo[]>('snapshot', 'ls'), []);
    assert.equal(cli.ok('snapshot', 'ls'), 'no snapshots\n');
    for (const id of restored) assert.equal(cli.json<SandboxInfo>('inspect', id).state, 'killed');
    assert.match(cli.fails(3, 'snapshot', 'inspect', 'before-change'), /before-change/);
    cli.ok('kill', src);
  });
});
