/**
 * Attack: memory bomb — anonymous allocation (`bytearray`) and an anonymous `mmap` touched page by page,
 * far past the sandbox's memory limit, from an exec and from the REPL.
 * Precedent: peers 6b #2 (cgroup `memory.max`; forkd's cgroup per child; mcp-run-python's notice that
 * Deno cannot bound this).
 * Contained when: the OOM killer fires inside the sandbox's own cgroup (its `oomKills` counter moves),
 * the result says out-of-memory, the sandbox's PID 1 survives and the sandbox stays usable (the REPL is
 * restarted and says so), and another sandbox keeps its REPL state.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();
const LIMIT_MB = 128;
const BOMBS = {
  bytearray: 'x = bytearray(600 * 1024 * 1024)\nprint("survived")',
  mmap: 'import mmap\nm = mmap.mmap(-1, 600 << 20)\nfor i in range(0, len(m), 4096): m[i] = 1\nprint("survived")',
};

describe('abuse: memory bomb', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id: string;
  let bystander: string;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({ memoryMb: LIMIT_MB })).id;
    bystander = (await api.createSandbox({})).id;
    await api.runCode(bystander, { code: 'kept = "bystander state"' });
  });
  after(async () => {
    await fx?.close();
  });

  const oomKills = async () => (await api.getSandbox(id, { usage: true })).usage?.oomKills ?? 0;
  /** PID 1's start time (field 22 of /proc/1/stat): the same agent process before and after. */
  const initStart = async () => (await api.exec(id, { cmd: 'cut -d" " -f22 /proc/1/stat' })).stdout.trim();

  for (const [kind, code] of Object.entries(BOMBS)) {
    it(`an exec allocating 600 MiB with ${kind} under a ${LIMIT_MB} MiB limit is OOM-killed in its cgroup`, async () => {
      const init = await initStart();
      const before = await oomKills();
      const r = await api.exec(id, { argv: ['python3', '-c', code], timeoutSeconds: 120 });
      assert.equal(r.oomKilled, true, JSON.stringify(r));
      assert.equal(r.signal, 9);
      assert.doesNotMatch(r.stdout, /survived/);
      assert.ok((await oomKills()) > before, 'the kill was counted in the sandbox’s own memory cgroup');
      assert.equal((await api.exec(id, { argv: ['echo', 'still here'] })).stdout, 'still here\n');
      assert.equal(await initStart(), init, 'PID 1 (the agent) survived');
      assert.equal((await api.getSandbox(id)).state, 'running');
      assert.equal((await api.runCode(bystander, { code: 'kept' })).value, "'bystander state'");
    });

    it(`the REPL allocating 600 MiB with ${kind} is OOM-killed, restarted and usable`, async () => {
      const init = await initStart();
      const before = await oomKills();
      const r = await api.runCode(id, { code, timeoutSeconds: 120 });
      assert.equal(r.ok, false);
      assert.equal(r.oomKilled, true, JSON.stringify(r));
      assert.equal(r.restarted, true, 'the result says the REPL state was lost');
      assert.doesNotMatch(r.stdout, /survived/);
      assert.ok((await oomKills()) > before, 'the kill was counted in the sandbox’s own memory cgroup');
      assert.equal((await api.runCode(id, { code: '2 + 2' })).value, '4');
      assert.equal(await initStart(), init, 'PID 1 (the agent) survived');
      assert.equal((await api.runCode(bystander, { code: 'kept' })).value, "'bystander state'");
    });
  }
});
