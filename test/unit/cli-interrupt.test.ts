/**
 * Ctrl-C in the CLI (src/cli/interrupt.ts): the first signal aborts the command's requests, runs its
 * clean-up and then exits 128+signal; a second signal exits at once. Signals come from a stand-in
 * emitter and the exit is recorded, so the real process is never touched. (The same behaviour against
 * a real daemon: test/integration/cli-cancel.test.ts.)
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { exitCodeForSignal, InterruptedError, trapInterrupts } from '../../src/cli/interrupt.ts';

function harness() {
  const proc = new EventEmitter();
  const exits: number[] = [];
  let exited: () => void = () => undefined;
  const exitSeen = new Promise<void>((r) => {
    exited = r;
  });
  const exit = (code: number) => {
    exits.push(code);
    exited();
  };
  return { proc, exits, exitSeen, exit };
}

describe('cli interrupt trap', () => {
  it('first signal: aborts, cleans up, then exits 128+signal', async () => {
    const h = harness();
    let release: () => void = () => undefined;
    const cleanupDone = new Promise<void>((r) => {
      release = r;
    });
    const seen: NodeJS.Signals[] = [];
    const trap = trapInterrupts({
      proc: h.proc,
      exit: h.exit,
      onInterrupt: async (sig) => {
        seen.push(sig);
        await cleanupDone;
      },
    });
    assert.equal(trap.signal.aborted, false);
    h.proc.emit('SIGINT', 'SIGINT');
    assert.equal(trap.signal.aborted, true);
    assert.ok(trap.signal.reason instanceof InterruptedError);
    assert.equal(trap.fired, true);
    assert.deepEqual(seen, ['SIGINT']);
    // The exit waits for the clean-up.
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(h.exits, []);
    release();
    await h.exitSeen;
    assert.deepEqual(h.exits, [130]);
  });

  it('a second signal exits at once, without waiting for the clean-up', async () => {
    const h = harness();
    let forced = 0;
    const trap = trapInterrupts({
      proc: h.proc,
      exit: h.exit,
      onInterrupt: () => new Promise<void>(() => undefined), // a kill that never answers
      onForce: () => forced++,
    });
    h.proc.emit('SIGINT', 'SIGINT');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(h.exits, []);
    h.proc.emit('SIGINT', 'SIGINT');
    assert.deepEqual(h.exits, [130]);
    assert.equal(forced, 1);
    trap.release();
  });

  it('exits at once after the abort when there is nothing to clean up', async () => {
    const h = harness();
    trapInterrupts({ proc: h.proc, exit: h.exit });
    h.proc.emit('SIGTERM', 'SIGTERM');
    await h.exitSeen;
    assert.deepEqual(h.exits, [exitCodeForSignal('SIGTERM')]);
    assert.equal(exitCodeForSignal('SIGTERM'), 143);
  });

  it('settle passes results through until a signal, then never settles', async () => {
    const h = harness();
    const trap = trapInterrupts({ proc: h.proc, exit: h.exit });
    assert.equal(await trap.settle(Promise.resolve(7)), 7);
    await assert.rejects(trap.settle(Promise.reject(new Error('boom'))), /boom/);
    let later: (v: number) => void = () => undefined;
    const pending = new Promise<number>((r) => {
      later = r;
    });
    let settled = false;
    void trap.settle(pending).then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    h.proc.emit('SIGINT', 'SIGINT');
    later(1);
    await h.exitSeen;
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, false, 'an interrupted command stops where it is');
  });

  it('release stops trapping', () => {
    const h = harness();
    const trap = trapInterrupts({ proc: h.proc, exit: h.exit });
    assert.equal(h.proc.listenerCount('SIGINT'), 1);
    trap.release();
    for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) assert.equal(h.proc.listenerCount(s), 0);
  });
});
