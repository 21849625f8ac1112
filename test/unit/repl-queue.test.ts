import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { queuedUnlessCancelled } from '../../src/runtimes/native/agent-link/repl-eval.ts';
import type { ReplResult } from '../../src/service/ports.ts';
import { createKeyedQueue } from '../../src/util/keyed-queue.ts';

const result = (value: string) => ({ ok: true, value }) as ReplResult;

describe('REPL calls queued per sandbox, dropped when cancelled while waiting', () => {
  it('a call cancelled while it waits answers at once and never runs; the others run in order', async () => {
    const q = createKeyedQueue();
    const run = <T>(key: string, fn: () => Promise<T>) => q.run(key, fn);
    const ran: string[] = [];
    let release = (): void => {};
    const first = queuedUnlessCancelled(run, 'sb', undefined, async () => {
      ran.push('first');
      await new Promise<void>((r) => {
        release = r;
      });
      return result('1');
    });
    const ac = new AbortController();
    const second = queuedUnlessCancelled(run, 'sb', ac.signal, async () => {
      ran.push('second');
      return result('2');
    });
    const third = queuedUnlessCancelled(run, 'sb', new AbortController().signal, async () => {
      ran.push('third');
      return result('3');
    });
    ac.abort();
    const dropped = await second; // answered while the first still runs
    assert.equal(dropped.cancelled, true);
    assert.equal(dropped.error?.type, 'Cancelled');
    assert.deepEqual(ran, ['first']);
    release();
    assert.equal((await first).value, '1');
    assert.equal((await third).value, '3');
    assert.deepEqual(ran, ['first', 'third']);
  });

  it('an already aborted signal runs nothing', async () => {
    const q = createKeyedQueue();
    const ac = new AbortController();
    ac.abort();
    let ran = false;
    const r = await queuedUnlessCancelled(
      (k, fn) => q.run(k, fn),
      'sb',
      ac.signal,
      async () => {
        ran = true;
        return result('x');
      },
    );
    assert.equal(r.cancelled, true);
    assert.equal(ran, false);
  });
});
