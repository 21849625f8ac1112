/**
 * Limits of native sandboxes against the real kernel: memory, pids, timeouts, output caps, and no
 * process left behind after a kill.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { totalmem } from 'node:os';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { pidsLimitHits, sandboxCgroupRel } from '../helpers/cgroup-files.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const skip = nativeUnavailable();

function hostPgrep(pattern: string): string {
  try {
    return execFileSync('pgrep', ['-af', pattern], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

describe('native sandbox limits', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
  });
  after(async () => {
    await fx?.close();
  });

  it('ends a memory bomb with out-of-memory and keeps the sandbox usable', async () => {
    const { id } = await api.createSandbox({ memoryMb: 128 });
    const r = await api.exec(id, {
      argv: ['python3', '-c', 'x = bytearray(600 * 1024 * 1024); print("survived")'],
      timeoutSeconds: 60,
    });
    assert.equal(r.oomKilled, true, JSON.stringify(r));
    assert.equal(r.signal, 9);
    assert.doesNotMatch(r.stdout, /survived/);
    assert.equal((await api.exec(id, { argv: ['echo', 'still here'] })).stdout, 'still here\n');
    // In the REPL too: the worker is killed and restarted, and the result says so.
    const repl = await api.runCode(id, { code: 'big = bytearray(600 * 1024 * 1024)', timeoutSeconds: 60 });
    assert.equal(repl.ok, false);
    assert.equal(repl.oomKilled, true, JSON.stringify(repl));
    assert.equal((await api.runCode(id, { code: '2 + 2' })).value, '4');
  });

  it('contains a fork bomb with the pids limit and the host stays responsive', async () => {
    const { id } = await api.createSandbox({ pids: 64 });
    const rel = sandboxCgroupRel(fx.stateDir, id);
    assert.equal(pidsLimitHits(rel), 0, 'no fork was refused before the bomb');
    // The bomb backgrounds itself, so the exec returns while it keeps forking: wait until the kernel
    // refuses a fork at the limit, then look at the group.
    const r = await api.exec(id, { cmd: 'bomb() { bomb | bomb & }; bomb', timeoutSeconds: 3 });
    assert.equal(r.oomKilled, false);
    const hits = await waitFor(() => pidsLimitHits(rel), {
      what: `the kernel refuses a fork in ${id} at its pids limit (pids.events max > 0)`,
      timeoutMs: 60_000,
    });
    assert.ok(hits > 0);
    const usage = await api.getSandbox(id, { usage: true });
    assert.ok((usage.usage?.pids ?? 0) <= 64, `pids ${usage.usage?.pids}`);
    // The host answers meanwhile and the sandbox can be killed.
    assert.equal(execFileSync('echo', ['host ok'], { encoding: 'utf8' }), 'host ok\n');
    await api.killSandbox(id);
    assert.equal((await api.getSandbox(id)).state, 'killed');
  });

  it('kills a command past its timeout together with its children', async () => {
    const { id } = await api.createSandbox({});
    const r = await api.exec(id, { cmd: 'sleep 3131 & sleep 3132; echo never', timeoutSeconds: 1 });
    assert.equal(r.timedOut, true);
    assert.doesNotMatch(r.stdout, /never/);
    const ps = await api.exec(id, { cmd: 'ps -eo comm,args --no-headers' });
    assert.doesNotMatch(ps.stdout, /sleep 313/);
  });

  it('keeps a flood of output to a head and a tail, with a marker naming the spool file', async () => {
    const { id } = await api.createSandbox({});
    const r = await api.exec(id, { cmd: 'yes forkbox | head -c 20000000', maxOutputBytes: 100_000 });
    assert.equal(r.truncated, true);
    assert.ok(r.stdout.length < 100_000 + 200, `stdout ${r.stdout.length} bytes`);
    assert.match(
      r.stdout,
      /\[forkbox: 19900000 bytes of stdout omitted here; the whole stdout is in \/tmp\/\.forkbox-output\//,
    );
    assert.equal(r.streams?.stdout.totalBytes, 20_000_000);
    assert.equal(r.exitCode, 0);
  });

  it('leaves no process behind on the host after a kill', async () => {
    const { id } = await api.createSandbox({});
    await api.exec(id, {
      cmd: 'nohup sleep 1717 >/dev/null 2>&1 & setsid sleep 1718 >/dev/null 2>&1 & echo ok',
    });
    assert.match(hostPgrep('sleep 171[78]'), /sleep 1717/);
    await api.killSandbox(id);
    assert.equal(hostPgrep('sleep 171[78]'), '');
  });

  it('refuses a create that would overcommit host memory, naming the limit', async () => {
    // Limits may add up to host memory × 64 (the default ratio): enough 1 TiB limits pass it.
    const ceiling = totalmem() * 64;
    const big: string[] = [];
    try {
      while ((big.length + 1) * 2 ** 40 <= ceiling)
        big.push((await api.createSandbox({ memoryMb: 2 ** 20 })).id);
      await assert.rejects(api.createSandbox({ memoryMb: 2 ** 20 }), (e: Error & { code?: string }) => {
        assert.equal(e.code, 'resource_exhausted');
        assert.match(e.message, /FORKBOX_OVERCOMMIT_RATIO/);
        return true;
      });
    } finally {
      for (const id of big) await api.killSandbox(id);
    }
  });
});
