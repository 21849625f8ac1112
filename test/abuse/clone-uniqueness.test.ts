/**
 * Attack: predicting or sharing secrets across clones — a fork copies the REPL's memory, so every
 * child starts from the same PRNG state, and copies can end up with the same identity: compare
 * `/proc/sys/kernel/random/uuid`, `os.urandom`, `random.random()`, `uuid.uuid4()`, the hostname and
 * `FORKBOX_SANDBOX_ID` across N fork children and their parent (tokens minted by one child would
 * otherwise be known to its siblings).
 * Precedent: Firecracker `docs/snapshotting/random-for-clones.md` and `network-for-clones.md` (peers 6b #19).
 * Contained when: every value differs between every pair of sandboxes in the family, from the REPL
 * (the copied memory) and from an exec, and each sandbox's hostname and FORKBOX_SANDBOX_ID are its own id.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { execPython, replPython } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();
const N = 4;

/** Run in the REPL, whose modules (and `random`'s state) were imported before the fork. */
const REPL_PROBE = `
import json
print(json.dumps({"urandom": os.urandom(16).hex(), "random": random.random(), "uuid4": str(uuid.uuid4()),
                  "hostname": socket.gethostname(), "env": os.environ.get("FORKBOX_SANDBOX_ID"),
                  "kernel_uuid": open("/proc/sys/kernel/random/uuid").read().strip()}))
`;
const EXEC_PROBE = `
import json, os, random, socket
print(json.dumps({"kernel_uuid": open("/proc/sys/kernel/random/uuid").read().strip(), "urandom": os.urandom(16).hex(),
                  "random": random.random(), "hostname": socket.gethostname(), "env": os.environ.get("FORKBOX_SANDBOX_ID")}))
`;

describe('abuse: clone uniqueness across forks', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let family: string[];

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    const parent = (await api.createSandbox({})).id;
    // The REPL's PRNG is seeded and used before the fork: children copy that state.
    await api.runCode(parent, { code: 'import os, random, socket, uuid\nrandom.random()\nuuid.uuid4()' });
    const fork = await api.forkSandbox(parent, { n: N });
    family = [parent, ...fork.children.map((c) => c.sandbox?.id ?? assert.fail(JSON.stringify(c.error)))];
  });
  after(async () => {
    await fx?.close();
  });

  const allDistinct = (rows: Record<string, unknown>[], key: string, where: string) => {
    const values = rows.map((r) => JSON.stringify(r[key]));
    assert.equal(new Set(values).size, rows.length, `${where}: ${key} repeats across the family: ${values}`);
  };

  it(`the parent and ${N} children differ in every random value and identity, in the REPL`, async () => {
    const rows = [];
    for (const id of family) {
      const r = await replPython<Record<string, string | number>>(api, id, REPL_PROBE);
      assert.equal(r.hostname, id, 'the hostname is the sandbox’s own id');
      assert.equal(r.env, id, 'FORKBOX_SANDBOX_ID is the sandbox’s own id');
      rows.push(r);
    }
    for (const key of ['urandom', 'random', 'uuid4', 'hostname', 'env', 'kernel_uuid'])
      allDistinct(rows, key, 'REPL');
  });

  it('and in exec commands', async () => {
    const rows = [];
    for (const id of family) {
      const r = await execPython<Record<string, string | number>>(api, id, EXEC_PROBE);
      assert.equal(r.hostname, id);
      assert.equal(r.env, id);
      rows.push(r);
    }
    for (const key of ['kernel_uuid', 'urandom', 'random', 'hostname', 'env']) allDistinct(rows, key, 'exec');
  });
});
