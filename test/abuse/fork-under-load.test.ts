/**
 * Attack (or bad luck): fork a sandbox whose REPL keeps a thread busy writing a file. A worker with threads
 * is forked the older two-step way, and a child copied while another thread held a lock (stdio, the import
 * lock, a file object's buffer) could die before it greeted the host: a fork of 30 lost 15 children ("its
 * agent (PID 1) exited unexpectedly"), 26 of 100 in another run.
 * Precedent: the issue "Sandboxes that share nothing" (item 7, reproduced on this host); POSIX fork() in a
 * multi-threaded process copies only the calling thread, so locks other threads held stay held.
 * Contained when: every child of a fork of 30 (and of 100) lives, answers a command and has the source's
 * REPL state, while the source's thread keeps writing; and the source still runs its thread afterwards.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();

const WRITER = [
  'import threading, time',
  'marker = "loaded"',
  'stop = False',
  'writes = 0',
  'def _write():',
  '    global writes',
  '    while not stop:',
  '        with open("/tmp/busy.txt", "a") as f:',
  '            f.write("x" * 4096)',
  '            f.flush()',
  '        writes += 1',
  '        if writes % 256 == 0:',
  '            open("/tmp/busy.txt", "w").close()',
  'threading.Thread(target=_write, daemon=True).start()',
  'time.sleep(0.2)',
].join('\n');

describe('abuse: forking a sandbox whose REPL thread writes all along', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let src: string;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    src = (await api.createSandbox({ memoryMb: 1024 })).id;
    const r = await api.runCode(src, { code: WRITER });
    assert.equal(r.ok, true, JSON.stringify(r.error));
  });
  after(async () => {
    await fx?.close();
  });

  for (const n of [30, 100]) {
    it(`every child of a fork of ${n} lives, with the source's state`, async () => {
      const r = await api.forkSandbox(src, { n, memoryMb: 64 });
      const lost = r.children.filter((c) => !c.ok);
      assert.deepEqual(
        lost.map((c) => c.error?.message),
        [],
        `${lost.length} of ${n} children lost`,
      );
      for (const c of r.children) {
        const id = c.sandbox?.id ?? '';
        const v = await api.runCode(id, { code: 'marker' });
        assert.equal(v.value, "'loaded'", `${id}: ${JSON.stringify(v)}`);
        assert.equal((await api.exec(id, { argv: ['true'] })).exitCode, 0, id);
      }
      for (const c of r.children) await api.killSandbox(c.sandbox?.id ?? '');
      const after = await api.runCode(src, {
        code: 'import time; w0 = writes; time.sleep(0.3); writes > w0',
      });
      assert.equal(after.value, 'True', 'the source’s thread still writes');
    });
  }
});
