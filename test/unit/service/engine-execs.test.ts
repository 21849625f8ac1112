/**
 * The exec manager through the engine: sync execs, background execs polled by sequence number with a
 * bounded wait, stdin, cancel, idempotency keys, output kept in the store under a cap, validation, and
 * execs in flight across a restart.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { ExecOutputChunk } from '../../../src/service/ports.ts';
import { rejectsWith } from '../../helpers/assert-error.ts';
import { createTestEngine, type TestEngine } from '../../helpers/test-engine.ts';

describe('engine: execs', () => {
  let t: TestEngine;
  let id: string;
  beforeEach(async () => {
    t = createTestEngine();
    id = (await t.api.createSandbox({})).id;
  });
  afterEach(() => t.close());

  it('runs a command to its end: output, exit status, streamed chunks, a stored record', async () => {
    const chunks: ExecOutputChunk[] = [];
    const r = await t.api.exec(
      id,
      { cmd: 'echo out; echo err >&2; exit 4' },
      { onOutput: (c) => chunks.push(c) },
    );
    assert.equal(r.stdout, 'out\n');
    assert.equal(r.stderr, 'err\n');
    assert.equal(r.exitCode, 4);
    assert.deepEqual(
      chunks.map((c) => c.stream),
      ['stdout', 'stderr'],
    );
    const rec = (await t.api.listExecs(id)).find((e) => e.id === r.execId);
    assert.equal(rec?.state, 'exited');
    assert.equal(rec?.exitCode, 4);
    assert.deepEqual(rec?.command, ['/bin/sh', '-c', 'echo out; echo err >&2; exit 4']);
    const stdin = await t.api.exec(id, { argv: ['cat'], stdin: Buffer.from('fed') });
    assert.equal(stdin.stdout, 'fed');
  });

  it('validates the request before running anything', async () => {
    await rejectsWith(t.api.exec(id, {}), 'invalid_argument', /exactly one of argv/);
    await rejectsWith(t.api.exec(id, { argv: ['a'], cmd: 'b' }), 'invalid_argument', /exactly one/);
    await rejectsWith(t.api.exec(id, { argv: ['a\0b'] }), 'invalid_argument', /NUL/);
    await rejectsWith(t.api.exec(id, { argv: ['true'], timeoutSeconds: -1 }), 'invalid_argument', /timeout/);
    await rejectsWith(t.api.exec(id, { argv: ['true'], maxOutputBytes: 2 ** 40 }), 'invalid_argument');
    await rejectsWith(t.api.exec(id, { argv: ['true'], env: { '1X': 'y' } }), 'invalid_argument');
    assert.deepEqual(await t.api.listExecs(id), []);
  });

  it('a timeout ends the command and is recorded as timed_out', async () => {
    const r = await t.api.exec(id, { argv: ['sleep', '600'], timeoutSeconds: 0.1 });
    assert.equal(r.timedOut, true);
    assert.equal(r.exitCode, null);
    assert.equal((await t.api.listExecs(id))[0]?.state, 'timed_out');
  });

  it('background: start, write stdin, poll by sequence with a bounded wait, done', async () => {
    const ex = await t.api.startExec(id, { argv: ['cat'], stdin: true });
    assert.equal(ex.state, 'running');
    const empty = await t.api.pollExec(id, ex.id);
    assert.deepEqual(empty.chunks, []);
    assert.equal(empty.done, false);
    assert.equal(empty.nextSeq, -1);
    // A poll with a wait returns as soon as output arrives.
    const waiting = t.api.pollExec(id, ex.id, { waitMs: 60_000 });
    await t.api.writeExecStdin(id, ex.id, Buffer.from('one'), true);
    const first = await waiting;
    assert.equal(first.chunks.map((c) => c.data).join(''), 'one', 'the waiting poll got the output');
    let all = first;
    while (!all.done) all = await t.api.pollExec(id, ex.id, { afterSeq: all.nextSeq, waitMs: 60_000 });
    assert.equal(all.exec.state, 'exited');
    assert.equal(all.exec.exitCode, 0);
    const after = await t.api.pollExec(id, ex.id, { afterSeq: all.nextSeq });
    assert.deepEqual(after.chunks, [], 'nothing after the last seq');
    await rejectsWith(t.api.writeExecStdin(id, ex.id, Buffer.from('x')), 'conflict', /ended/);
  });

  it('cancel ends a background exec as cancelled; cancelling an ended one returns it unchanged', async () => {
    const ex = await t.api.startExec(id, { argv: ['sleep', '600'] });
    const c = await t.api.cancelExec(id, ex.id);
    assert.equal(c.state, 'cancelled');
    assert.equal((await t.api.cancelExec(id, ex.id)).state, 'cancelled');
    await rejectsWith(t.api.pollExec(id, 'ex-nope'), 'not_found', /exec_list/);
    const other = (await t.api.createSandbox({})).id;
    // An exec is found only in its own sandbox.
    await rejectsWith(t.api.pollExec(other, ex.id), 'not_found');
  });

  it('an idempotency key runs a command once, sync or background', async () => {
    const a = await t.api.exec(id, { cmd: 'echo run >> /tmp/n; cat /tmp/n', idempotencyKey: 'k1' });
    const b = await t.api.exec(id, { cmd: 'echo run >> /tmp/n; cat /tmp/n', idempotencyKey: 'k1' });
    assert.equal(a.execId, b.execId);
    assert.equal(b.stdout, 'run\n', 'the stored outcome, not a second run');
    assert.equal((await t.api.readFile(id, '/tmp/n')).data.toString(), 'run\n');
    const s1 = await t.api.startExec(id, { argv: ['sleep', '600'], idempotencyKey: 'k2' });
    const s2 = await t.api.startExec(id, { argv: ['sleep', '600'], idempotencyKey: 'k2' });
    assert.equal(s1.id, s2.id);
    assert.equal((await t.api.listExecs(id)).length, 2);
  });

  it('keeps at most max_output_bytes of a background exec and marks it truncated', async () => {
    const ex = await t.api.startExec(id, { argv: ['seq', '1', '5000'], maxOutputBytes: 100 });
    const p = await t.api.pollExec(id, ex.id, { waitMs: 60_000 });
    const done = p.done ? p : await t.api.pollExec(id, ex.id, { afterSeq: p.nextSeq, waitMs: 60_000 });
    assert.equal(done.exec.truncated, true);
    const kept = (await t.api.pollExec(id, ex.id)).chunks.map((c) => c.data).join('');
    assert.ok(kept.length <= 100, `${kept.length} bytes kept`);
    assert.ok(kept.startsWith('1\n2\n3\n'));
  });

  it('runCode runs Python in the REPL, node in its REPL and bash snippets as processes', async () => {
    assert.equal((await t.api.runCode(id, { code: 'a = 6 * 7' })).ok, true);
    assert.equal((await t.api.runCode(id, { code: 'a' })).value, '42');
    const b = await t.api.runCode(id, { language: 'bash', code: 'echo hi; exit 2' });
    assert.equal(b.ok, false);
    assert.equal(b.stdout, 'hi\n');
    assert.match(b.error?.message ?? '', /exited with 2/);
    // Node goes to the runtime's Node REPL (nodejs too); the fake's images have none: it says so.
    await rejectsWith(t.api.runCode(id, { language: 'node', code: '1' }), 'requirement_missing', /Node\.js/);
    await rejectsWith(
      t.api.runCode(id, { language: 'nodejs', code: '1' }),
      'requirement_missing',
      /Node\.js/,
    );
    await t.api.resetCode(id);
    assert.equal((await t.api.runCode(id, { code: 'a' })).error?.type, 'NameError');
  });

  it('after a restart, execs that were running are reported interrupted', async () => {
    const ex = await t.api.startExec(id, { argv: ['sleep', '600'] });
    t = await t.restart();
    const p = await t.api.pollExec(id, ex.id);
    assert.equal(p.exec.state, 'interrupted');
    assert.equal(p.done, true);
  });
});
