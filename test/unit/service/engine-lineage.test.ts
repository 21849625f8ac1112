/**
 * Lineage through the engine: forks (records, names, labels, limits, bounds, per-child failures),
 * tombstones for parents whose children still live, cascades, and merge with its aliases.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { rejectsWith } from '../../helpers/assert-error.ts';
import { createTestEngine, type TestEngine } from '../../helpers/test-engine.ts';

const ids = (r: { children: { sandbox?: { id: string } }[] }) => r.children.map((c) => c.sandbox?.id ?? '');

describe('engine: forks', () => {
  let t: TestEngine;
  beforeEach(() => {
    t = createTestEngine();
  });
  afterEach(() => t.close());

  it('makes n running children with the source’s files, REPL, env, labels and limits', async () => {
    const src = await t.api.createSandbox({
      name: 'src',
      memoryMb: 256,
      env: { E: '1' },
      labels: { l: 'x' },
    });
    await t.api.writeFile('src', '/tmp/f', Buffer.from('from src'));
    await t.api.runCode('src', { code: 'v = 7' });
    const r = await t.api.forkSandbox('src', { n: 3, labels: { extra: 'y' }, env: { F: '2' } });
    assert.equal(r.source, src.id);
    assert.equal(r.children.length, 3);
    assert.equal(r.carried.pythonState, true);
    assert.ok(r.notCarried.some((s) => /processes other than the Python REPL/.test(s)));
    for (const id of ids(r)) {
      const c = await t.api.getSandbox(id);
      assert.equal(c.parentId, src.id);
      assert.equal(c.depth, 1);
      assert.equal(c.state, 'running');
      assert.deepEqual(c.labels, { l: 'x', extra: 'y' });
      assert.equal(c.limits.memoryBytes, 256 * 2 ** 20);
      assert.equal((await t.api.readFile(id, '/tmp/f')).data.toString(), 'from src');
      assert.equal((await t.api.runCode(id, { code: 'v' })).value, '7');
      assert.equal((await t.api.exec(id, { cmd: 'echo $E$F' })).stdout, '12\n');
    }
    assert.deepEqual((await t.api.getSandbox('src')).children.sort(), ids(r).sort());
  });

  it('names the children, refusing duplicates and a wrong count; bounds n', async () => {
    await t.api.createSandbox({ name: 'src' });
    await t.api.createSandbox({ name: 'busy' });
    await rejectsWith(t.api.forkSandbox('src', { n: 0 }), 'invalid_argument', /n must be .* 1 to 100/);
    await rejectsWith(t.api.forkSandbox('src', { n: 101 }), 'invalid_argument', /1 to 100/);
    await rejectsWith(t.api.forkSandbox('src', { n: 1.5 }), 'invalid_argument');
    await rejectsWith(t.api.forkSandbox('src', { n: 2, names: ['a'] }), 'invalid_argument', /exactly n = 2/);
    await rejectsWith(t.api.forkSandbox('src', { n: 2, names: ['a', 'a'] }), 'already_exists');
    await rejectsWith(t.api.forkSandbox('src', { n: 1, names: ['busy'] }), 'already_exists');
    await rejectsWith(t.api.forkSandbox('src', { n: 1, memoryMb: 1 }), 'invalid_argument', /memory_mb/);
    assert.equal(t.store.listSandboxes().length, 2, 'a refused fork records nothing');
    const r = await t.api.forkSandbox('src', { n: 2, names: ['left', 'right'] });
    assert.deepEqual(
      r.children.map((c) => c.sandbox?.name),
      ['left', 'right'],
    );
  });

  it('a child that fails is reported on its own and recorded failed; its siblings run', async () => {
    await t.api.createSandbox({ name: 'src' });
    t.runtime.failNext('bad', 'set-up failed inside the new sandbox');
    const r = await t.api.forkSandbox('src', { n: 2, names: ['good', 'bad'] });
    assert.equal(r.children[0]?.ok, true);
    assert.equal(r.children[1]?.ok, false);
    assert.match(r.children[1]?.error?.message ?? '', /set-up failed/);
    assert.equal(t.store.getSandboxByName('bad', 'default')?.state, 'failed');
    assert.equal((await t.api.getSandbox('good')).state, 'running');
  });

  it('refuses to fork a paused or killed sandbox', async () => {
    const s = await t.api.createSandbox({});
    await t.api.pauseSandbox(s.id);
    await rejectsWith(t.api.forkSandbox(s.id, { n: 1 }), 'conflict', /paused/);
    await t.api.killSandbox(s.id);
    await rejectsWith(t.api.forkSandbox(s.id, { n: 1 }), 'conflict', /killed/);
  });
});

describe('engine: kill, tombstones and cascades', () => {
  let t: TestEngine;
  beforeEach(() => {
    t = createTestEngine();
  });
  afterEach(() => t.close());

  it('a parent killed before its child stays a tombstone until the child ends', async () => {
    const p = await t.api.createSandbox({});
    const [c] = ids(await t.api.forkSandbox(p.id, { n: 1 })) as [string];
    const killed = await t.api.killSandbox(p.id);
    assert.equal(killed.state, 'killed');
    assert.match(killed.endReason ?? '', /PID 1 stays until its 1 child sandbox/);
    assert.deepEqual(
      t.runtime.calls
        .filter((x) => x.rid === p.id)
        .map((x) => x.op)
        .slice(-1),
      ['tombstone'],
    );
    assert.equal(t.store.getSandbox(p.id)?.runtime.tombstone, true);
    assert.equal((await t.api.exec(c, { cmd: 'echo alive' })).stdout, 'alive\n');
    await t.api.killSandbox(c);
    assert.equal(t.store.getSandbox(p.id)?.runtime.tombstone, false, 'released with its last child');
    assert.equal(t.runtime.sandboxes.has(p.id), false);
  });

  it('cascade kills the whole subtree, deepest first', async () => {
    const root = await t.api.createSandbox({});
    const [mid] = ids(await t.api.forkSandbox(root.id, { n: 1 })) as [string];
    const [leaf] = ids(await t.api.forkSandbox(mid, { n: 1 })) as [string];
    const other = await t.api.createSandbox({});
    await t.api.killSandbox(root.id, { cascade: true });
    for (const id of [root.id, mid, leaf]) assert.equal((await t.api.getSandbox(id)).state, 'killed');
    assert.match((await t.api.getSandbox(leaf)).endReason ?? '', /cascade from/);
    const order = t.runtime.calls.filter((x) => x.op === 'killSandbox').map((x) => x.rid);
    assert.deepEqual(order, [leaf, mid, root.id]);
    assert.equal((await t.api.getSandbox(other.id)).state, 'running');
    assert.equal(t.runtime.sandboxes.size, 1);
  });

  it('killing a sandbox cancels its running execs', async () => {
    const s = await t.api.createSandbox({});
    const ex = await t.api.startExec(s.id, { argv: ['sleep', '600'] });
    await t.api.killSandbox(s.id);
    const done = await t.api.pollExec(s.id, ex.id, { waitMs: 5000 });
    assert.equal(done.done, true);
    assert.notEqual(done.exec.state, 'running');
  });
});

describe('engine: merge', () => {
  let t: TestEngine;
  beforeEach(() => {
    t = createTestEngine();
  });
  afterEach(() => t.close());

  it('the winner takes over the parent’s id and name; its old id is an alias; the old processes end', async () => {
    const p = await t.api.createSandbox({ name: 'proj' });
    await t.api.writeFile('proj', '/tmp/v', Buffer.from('parent'));
    const [w, loser] = ids(await t.api.forkSandbox('proj', { n: 2 })) as [string, string];
    await t.api.writeFile(w, '/tmp/v', Buffer.from('winner'));
    await t.api.runCode(w, { code: 'best = 1' });
    const m = await t.api.mergeSandbox('proj', w);
    assert.equal(m.winner, w);
    assert.equal(m.sandbox.id, p.id);
    assert.equal(m.sandbox.name, 'proj');
    assert.equal((await t.api.readFile('proj', '/tmp/v')).data.toString(), 'winner');
    assert.equal((await t.api.runCode('proj', { code: 'best' })).value, '1');
    // The winner's old id answers as the parent.
    assert.equal((await t.api.getSandbox(w)).id, p.id);
    assert.equal((await t.api.readFile(w, '/tmp/v')).data.toString(), 'winner');
    // The other fork is untouched and is still the parent's child.
    assert.equal((await t.api.readFile(loser, '/tmp/v')).data.toString(), 'parent');
    assert.equal((await t.api.getSandbox(loser)).parentId, p.id);
    // The parent's old processes went to a hidden record, killed (a tombstone while the loser lives).
    const hidden = t.store.listSandboxes().filter((r) => r.labels['forkbox.merged-into'] === p.id);
    assert.equal(hidden.length, 1);
    assert.equal(hidden[0]?.state, 'killed');
    assert.ok(
      !(await t.api.listSandboxes({ all: true })).some((s) => s.id === hidden[0]?.id),
      'hidden from the caller',
    );
    await t.api.killSandbox(loser);
    assert.equal(t.runtime.sandboxes.has(hidden[0]?.id ?? ''), false, 'released with the last child');
  });

  it('merges only a running fork into one of its live ancestors', async () => {
    const p = await t.api.createSandbox({});
    const q = await t.api.createSandbox({});
    const [c] = ids(await t.api.forkSandbox(p.id, { n: 1 })) as [string];
    const [gc] = ids(await t.api.forkSandbox(c, { n: 1 })) as [string];
    await rejectsWith(t.api.mergeSandbox(p.id, p.id), 'invalid_argument', /into itself/);
    await rejectsWith(t.api.mergeSandbox(q.id, c), 'invalid_argument', /not an ancestor/);
    await t.api.pauseSandbox(gc);
    await rejectsWith(t.api.mergeSandbox(p.id, gc), 'conflict', /paused/);
    await t.api.resumeSandbox(gc);
    const m = await t.api.mergeSandbox(p.id, gc); // a grandchild into its grandparent
    assert.equal(m.sandbox.id, p.id);
    assert.equal((await t.api.getSandbox(c)).state, 'running', 'the middle generation is untouched');
  });
});
