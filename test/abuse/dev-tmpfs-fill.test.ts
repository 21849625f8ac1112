/**
 * Attack: fill the sandbox's `/dev` and `/dev/shm` (issue #11 item 5). Both are tmpfs, whose pages are
 * charged to the sandbox's memory cgroup and cannot be reclaimed; at 64 MiB each they took all of a small
 * sandbox's memory and its OOM killer was left with the agent. Precedent: Docker's default 64 MiB
 * `/dev/shm` and the size-capped tmpfs of Kubernetes' `emptyDir: {medium: Memory, sizeLimit}`, both
 * introduced because unbounded shm let a container exhaust memory.
 *
 * Holds when: in a 128 MiB sandbox and in a fork of it, each tmpfs is 16 MiB (an eighth of the limit),
 * writing past it fails with ENOSPC, and after both are full the agent still answers, the REPL keeps its
 * state, and removing the files gives the space back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const why = nativeUnavailable();
const MIB = 1024 * 1024;

const FILL = `
import errno, os
def fill(path):
    chunk = b'\\0' * (1 << 20)
    n = 0
    with open(path, 'wb') as f:
        try:
            while n < (256 << 20):
                f.write(chunk); f.flush(); n += len(chunk)
        except OSError as e:
            return (n, errno.errorcode.get(e.errno))
    return (n, None)
[fill('/dev/shm/fill'), fill('/dev/fill')]`;

describe('abuse: filling /dev and /dev/shm', { skip: why ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
  });
  after(async () => {
    await fx?.close();
  });

  async function attack(id: string, label: string): Promise<void> {
    const df = await api.exec(id, { argv: ['df', '-B1', '--output=target,size', '/dev', '/dev/shm'] });
    assert.equal(df.exitCode, 0, df.stderr);
    for (const target of ['/dev', '/dev/shm']) {
      const line = df.stdout.split('\n').find((l) => l.trim().split(/\s+/)[0] === target);
      assert.equal(
        Number(line?.trim().split(/\s+/)[1]),
        16 * MIB,
        `${label}: size of ${target} (${df.stdout})`,
      );
    }
    assert.equal((await api.runCode(id, { code: 'kept = "still here"' })).ok, true);
    const r = await api.runCode(id, { code: FILL });
    assert.equal(r.ok, true, r.error?.traceback);
    const m = /^\[\((\d+), '(\w+)'\), \((\d+), '(\w+)'\)\]$/.exec(r.value ?? '');
    assert.ok(m, `${label}: both fills end in an error (${r.value})`);
    assert.equal(m[2], 'ENOSPC', label);
    assert.equal(m[4], 'ENOSPC', label);
    assert.ok(Number(m[1]) <= 16 * MIB && Number(m[3]) <= 16 * MIB, `${label}: ${r.value}`);
    // Full: the agent still answers, the REPL keeps its state, nothing was OOM-killed.
    const e = await api.exec(id, { argv: ['echo', 'alive'] });
    assert.equal(e.stdout, 'alive\n', label);
    const k = await api.runCode(id, { code: 'kept' });
    assert.equal(k.value, "'still here'", label);
    assert.equal(k.restarted, false);
    assert.equal((await api.getSandbox(id)).state, 'running');
    const rm = await api.exec(id, {
      cmd: 'rm /dev/shm/fill /dev/fill && head -c 1048576 /dev/zero > /dev/shm/again',
    });
    assert.equal(rm.exitCode, 0, `${label}: the space comes back (${rm.stderr})`);
  }

  it('a 128 MiB sandbox and its fork: 16 MiB each, ENOSPC past it, the agent lives', async () => {
    const id = (await api.createSandbox({ name: 'devfill', memoryMb: 128 })).id;
    await attack(id, 'sandbox');
    const child = (await api.forkSandbox(id, { n: 1 })).children[0]?.sandbox?.id ?? '';
    assert.ok(child);
    await attack(child, 'fork child');
  });
});
