/**
 * Attack: a command escapes the kill that ends it by leaving its process group — `setsid`, `nohup`, a
 * double fork that reparents to PID 1 — so that a timeout or cancel, which used to SIGKILL only the
 * command's process group, leaves those processes running in the sandbox. Precedent: issue #11 item 12
 * (an exec's `--timeout` killed only its process group; setsid/nohup children survived), the same gap as
 * process-group-based timeouts in CI runners, where daemons started by a job outlive it.
 * Contained when a timeout and a cancel each leave no process the command started, whatever its group.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { processesIn } from '../helpers/exec-probe.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();
const ESCAPES =
  'setsid sleep 901 & nohup sleep 902 >/dev/null 2>&1 & (sleep 903 &) ; setsid sh -c "(sleep 904 &) ; sleep 905" & ' +
  "python3 -c \"import os; os.fork() or (os.setsid(), os.fork() or os.execvp('sleep', ['sleep', '906']))\" ; ";

describe('abuse: setsid, nohup and double-fork survivors of a timeout or a cancel', {
  skip: skip ?? false,
}, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id = '';

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({})).id;
  });
  after(async () => {
    await fx?.close();
  });

  it('a timeout ends them all', async () => {
    const o = await api.exec(id, { cmd: `${ESCAPES} sleep 907`, timeoutSeconds: 2 });
    assert.equal(o.timedOut, true, JSON.stringify(o));
    assert.deepEqual(await processesIn(api, id, 'sleep 90'), []);
  });

  it('a cancel ends them all', async () => {
    const rec = await api.startExec(id, { cmd: `${ESCAPES} echo ready; sleep 908` });
    for (;;) {
      const p = await api.pollExec(id, rec.id, { afterSeq: -1, waitMs: 2000 });
      if (p.chunks.some((c) => c.data.includes('ready'))) break;
    }
    assert.ok((await processesIn(api, id, 'sleep 90')).length >= 6, 'the escapes are running');
    const ended = await api.cancelExec(id, rec.id);
    assert.equal(ended.state, 'cancelled');
    assert.deepEqual(await processesIn(api, id, 'sleep 90'), []);
  });
});
