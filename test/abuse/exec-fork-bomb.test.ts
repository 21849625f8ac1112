/**
 * Attack: a bash fork bomb run as an exec. Its first shell exits at once while its copies multiply up to the
 * sandbox's pids limit, so the exec "succeeds" and the bomb keeps the sandbox saturated. Precedent: issue
 * #11 item 12 — such an exec returned exit 0 with 511 processes still alive and nothing said so; the
 * classic `:(){ :|:& };:` of every shared Unix host.
 * Contained when the result says how many of its processes still run (never a silent exit 0), a cancel
 * ends every one of them, the sandbox's other work is unaffected, and it runs commands again at once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { until } from '../helpers/exec-probe.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();

describe('abuse: fork bomb exec', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
  });
  after(async () => {
    await fx?.close();
  });

  it('is reported with its surviving processes, and cancel ends them all', async () => {
    const { id } = await api.createSandbox({ pids: 128 });
    const o = await api.exec(id, { argv: ['bash', '-c', ':(){ :|:& };:'] });
    assert.ok(o.leftovers > 0, `the result counts what still runs: ${JSON.stringify(o)}`);
    const rec = (await api.listExecs(id)).find((e) => e.id === o.execId);
    assert.ok(rec?.tree, 'the exec keeps its tree for cancel');
    const ended = await api.cancelExec(id, o.execId);
    assert.equal(ended.leftovers, 0);
    // Every bomb process is gone: the sandbox holds only its agent (and its helpers) again.
    await until('the bomb to be gone', async () => {
      const u = await api.getSandbox(id, { usage: true });
      return (u.usage?.pids ?? 999) <= 4;
    });
    assert.equal((await api.exec(id, { argv: ['echo', 'usable'] })).stdout, 'usable\n');
  });

  it('a bomb under a timeout is ended whole by the timeout', async () => {
    const { id } = await api.createSandbox({ pids: 128 });
    const o = await api.exec(id, { argv: ['bash', '-c', ':(){ :|:& };: ; sleep 30'], timeoutSeconds: 2 });
    assert.equal(o.timedOut, true, JSON.stringify(o));
    assert.equal(o.leftovers, 0);
    await until('the bomb to be gone', async () => {
      const u = await api.getSandbox(id, { usage: true });
      return (u.usage?.pids ?? 999) <= 4;
    });
    assert.equal((await api.exec(id, { argv: ['echo', 'usable'] })).stdout, 'usable\n');
  });
});
