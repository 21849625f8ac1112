/**
 * The agent in a real sandbox enforces the host's bounds, not numbers of its own (domain/limits.ts
 * AGENT_BOUNDS, handed over in FORKBOX_BOUNDS). Before, REST accepted `maxOutputBytes` of 8 MiB and an exec
 * returned it, while a code run with the same setting silently returned 2 MiB: the agent's REPL had its
 * own cap.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MiB } from '../../src/domain/sizes.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { nativeUnavailable, withOneSandbox } from '../helpers/native.ts';

const skip = nativeUnavailable();
const BYTES = 8 * MiB;

describe("the agent keeps the host's bounds", { skip: skip ?? false }, () => {
  let api: ForkboxApi;
  let id: string;
  withOneSandbox((s) => {
    ({ api, id } = s);
  });

  it('returns 8 MiB inline from a code run and from an exec alike when asked to', async () => {
    const code = `import sys\nsys.stdout.write("x" * ${BYTES})\nsys.stdout.flush()`;
    const run = await api.runCode(id, { code, maxOutputBytes: BYTES });
    assert.equal(run.stdout.length, BYTES, run.stdout.slice(-300));
    const ex = await api.exec(id, { argv: ['python3', '-c', code], maxOutputBytes: BYTES });
    assert.equal(ex.stdout.length, BYTES, ex.stdout.slice(-300));
  });

  it('hands the bounds to no command', async () => {
    const r = await api.exec(id, { argv: ['env'] });
    assert.match(r.stdout, /^PATH=/m);
    assert.doesNotMatch(r.stdout, /FORKBOX_BOUNDS/);
  });
});
