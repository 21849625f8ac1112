/**
 * Attack (code in a sandbox against the daemon's patience): the sandbox's Python registers an at-fork hook
 * that kills every child right after it is cloned (`os.register_at_fork(after_in_child=…os._exit…)`), so
 * each fork's children die during their set-up, before they greet the host. Precedent: issue #11 item 11 —
 * a child that died during set-up went unnoticed and its caller waited for a 10-second timeout (per child:
 * a fork of many from such a source held the daemon's fork slots that long); the class is the supervisor
 * that waits on a socket instead of on its child.
 *
 * Contained when the fork answers as soon as the children are dead — well before the daemon's own start
 * deadline, which this test raises to ten minutes, so only noticing the deaths can end it in time — with
 * an error per child naming the cause (it died during its set-up, before greeting the host), each child
 * recorded `failed`, nothing of them left on the host, and the source still working.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkResult } from '../../src/service/api.ts';
import { type AbuseDaemon, startDaemon } from '../helpers/abuse.ts';
import { leftovers } from '../helpers/leftovers.ts';
import { nativeUnavailable } from '../helpers/native.ts';
import { waitForEvent } from '../helpers/wait-for.ts';

const why = nativeUnavailable();
const TEN_MINUTES = String(10 * 60_000);

describe('abuse: fork children that die during their set-up', () => {
  let d: AbuseDaemon;

  before(async () => {
    if (why) throw new Error(`this abuse test needs the native runtime: ${why}`);
    d = await startDaemon({
      env: { FORKBOX_SANDBOX_START_TIMEOUT_MS: TEN_MINUTES, FORKBOX_AGENT_FORK_TIMEOUT_MS: TEN_MINUTES },
    });
  });
  after(async () => {
    await d?.stop();
  });

  it('reports each dead child at once, by its cause, and leaves nothing behind', async () => {
    const src = await d.api.createSandbox({});
    await d.api.runCode(src.id, {
      code: 'import os\nos.register_at_fork(after_in_child=lambda: os._exit(3))',
    });
    const outcome = d.api.forkSandbox(src.id, { n: 3, memoryMb: 64 });
    outcome.catch(() => undefined);
    // A bound on the wait, far below the daemon's own deadlines: only noticing the deaths meets it.
    const r = await waitForEvent<ForkResult | Error>((cb) => void outcome.then(cb, (e: Error) => cb(e)), {
      what: 'the fork to answer after its children died',
      timeoutMs: 60_000,
    });
    assert.ok(!(r instanceof Error), `the fork itself failed: ${String(r)}`);
    assert.equal(r.children.length, 3);
    for (const c of r.children) {
      assert.equal(c.ok, false, JSON.stringify(c));
      assert.equal(c.error?.code, 'sandbox_gone', JSON.stringify(c));
      assert.match(
        c.error?.message ?? '',
        /died during its set-up: .*before it (could greet|greeted) the host/,
      );
    }
    const kids = (await d.api.listSandboxes({ all: true })).filter((s) => s.parentId === src.id);
    assert.equal(kids.length, 3);
    for (const k of kids) {
      assert.equal(k.state, 'failed');
      assert.match(k.endReason ?? '', /died during its set-up/);
    }
    assert.deepEqual(leftovers(d.stateDir), [], 'nothing of the children is left');
    // The source is unharmed: its REPL and commands work.
    assert.equal((await d.api.runCode(src.id, { code: '6 * 7' })).value, '42');
    assert.equal((await d.api.exec(src.id, { argv: ['echo', 'src'] })).stdout, 'src\n');
  });
});
