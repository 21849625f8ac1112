/**
 * Attack: a command exits at once and leaves its real work running in the background (`server &`, a
 * daemonizing program), outside any handle the caller holds: nothing reports it, nothing can stop it short
 * of killing the sandbox. Precedent: issue #11 item 12 (a fork bomb exec returned exit 0 with hundreds of
 * processes silently alive), and every CI job that leaks a daemon past its end.
 * Contained when the exit's result counts the processes left running, keeps them (agents start dev
 * servers that way), and cancelling the ended exec ends every one of them — over the REST API of a real
 * daemon too, where the exec record says how many there were.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DaemonClient } from '../../src/transports/daemon-client.ts';
import { type AbuseDaemon, startDaemon } from '../helpers/abuse.ts';
import { processesIn } from '../helpers/exec-probe.ts';
import { nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();

describe('abuse: processes left running after an exec exits', { skip: skip ?? false }, () => {
  let daemon: AbuseDaemon | undefined;
  let api: DaemonClient;

  before(async () => {
    daemon = await startDaemon();
    api = daemon.api;
  });
  after(async () => {
    await daemon?.stop();
  });

  it('counts them, keeps them, and cancel after the exit ends them all', async () => {
    const { id } = await api.createSandbox({});
    const o = await api.exec(id, {
      cmd: 'python3 -m http.server 8123 >/dev/null 2>&1 & setsid sleep 931 & (setsid sleep 932 &) ; exit 0',
    });
    assert.equal(o.exitCode, 0);
    assert.equal(o.leftovers, 3, JSON.stringify(o));
    assert.equal(
      (await processesIn(api, id, 'python3 -m http.server 8123')).length,
      1,
      'the server keeps running',
    );
    assert.equal((await processesIn(api, id, 'sleep 93')).length, 2);
    const rec = (await api.listExecs(id)).find((e) => e.id === o.execId);
    assert.equal(rec?.leftovers, 3);
    const ended = await api.cancelExec(id, o.execId);
    assert.equal(ended.leftovers, 0);
    assert.equal(ended.state, 'exited', 'it had exited: cancel ends its leftovers, not its history');
    assert.deepEqual(await processesIn(api, id, 'python3 -m http.server 8123'), []);
    assert.deepEqual(await processesIn(api, id, 'sleep 93'), []);
  });
});
