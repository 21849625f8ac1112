/**
 * Attack: predict a sibling's secrets from a fork (issue #11 item 16). Children of one fork start as copies
 * of one interpreter: unless the interpreter's at-fork hooks run in each child, they draw the same
 * `random` numbers and `tempfile` names and skip user `os.register_at_fork` handlers (which libraries use to
 * reseed or reconnect), so one child could predict another's tokens and temporary paths. Precedent:
 * CVE-2013-1445 (PyCrypto's RNG returned the same bytes in a parent and its forked child) and the OpenSSL
 * RAND_bytes-after-fork duplicates fixed by reseeding on a pid change.
 *
 * Holds when: after a fork into three children, each child's user at-fork handler ran, and their
 * handler-drawn tokens, `random.random()` values and `tempfile` names are pairwise different.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const why = nativeUnavailable();

const REGISTER = `
import os, random, tempfile
token = None
def _after_fork_in_child():
    global token
    token = os.urandom(8).hex()
os.register_at_fork(after_in_child=_after_fork_in_child)
random.seed(1234)  # the same state in every child unless something reseeds it
'registered'`;

const DRAW = `
import os
fd, path = tempfile.mkstemp()
os.close(fd)
os.unlink(path)
print(token, repr(random.random()), os.path.basename(path))`;

describe('abuse: shared randomness across the children of a fork', { skip: why ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
  });
  after(async () => {
    await fx?.close();
  });

  it('each child runs the at-fork hooks: tokens, random numbers and temp names differ', async () => {
    const source = (await api.createSandbox({ name: 'rng-source' })).id;
    const reg = await api.runCode(source, { code: REGISTER });
    assert.equal(reg.value, "'registered'", reg.error?.traceback);
    const fork = await api.forkSandbox(source, { n: 3 });
    const draws: string[][] = [];
    for (const c of fork.children) {
      assert.ok(c.sandbox, JSON.stringify(c.error));
      const r = await api.runCode(c.sandbox.id, { code: DRAW });
      assert.equal(r.ok, true, r.error?.traceback);
      const fields = r.stdout.trim().split(' ');
      assert.equal(fields.length, 3, r.stdout);
      assert.notEqual(fields[0], 'None', 'the user at-fork handler ran in the child');
      draws.push(fields);
    }
    for (const [i, what] of ['at-fork token', 'random.random()', 'tempfile name'].entries()) {
      const values = draws.map((d) => d[i]);
      assert.equal(
        new Set(values).size,
        values.length,
        `${what} repeats across children: ${values.join(', ')}`,
      );
    }
    assert.equal(draws.length, 3);
  });
});
