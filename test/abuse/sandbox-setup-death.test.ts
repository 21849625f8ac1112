/**
 * Attack (a hostile or broken image against the daemon's patience): every new sandbox's PID 1 dies right
 * after its template's REPL worker clones it, before it greets the host — here a module the template
 * pre-imports registers an at-fork hook that exits the child (`os.register_at_fork(after_in_child=…)`), as
 * a package in an image can. Precedent: issue #11 item 11 — a child that died during set-up went unnoticed
 * and each create waited for a 10-second timeout; the class is the supervisor that waits on a socket
 * instead of on its child.
 *
 * Contained when the create fails as soon as the child is dead — well before the daemon's own start
 * deadline, which this test raises to ten minutes, so only noticing the death can end it in time — with
 * an error naming the cause (the sandbox died during its set-up, before greeting the host), the sandbox
 * recorded `failed` with it, nothing of it left on the host, and sandboxes of a sound template still work.
 */
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type AbuseDaemon, startDaemon } from '../helpers/abuse.ts';
import { leftovers } from '../helpers/leftovers.ts';
import { defaultImage, makeStateDir, nativeUnavailable } from '../helpers/native.ts';
import { createOutcome, TEN_MINUTES, writeImageVariant } from '../helpers/setup-death.ts';

const why = nativeUnavailable();
/** Host uid of the sandboxes' root (container uid 0 shifted, docs/ARCHITECTURE.md). */
const SHIFTED_ROOT = 100000;

/** A layer holding one Python module that exits every process forked after its import. */
function hookLayer(stateDir: string): string {
  const layer = join(stateDir, 'test-layer');
  const pkgDir = join(layer, 'usr/lib/python3/dist-packages');
  mkdirSync(pkgDir, { recursive: true });
  writeFileSync(
    join(pkgDir, 'forkbox_test_diehook.py'),
    'import os\nos.register_at_fork(after_in_child=lambda: os._exit(3))\n',
  );
  for (const p of ['', 'usr', 'usr/lib', 'usr/lib/python3', 'usr/lib/python3/dist-packages']) {
    chownSync(join(layer, p), SHIFTED_ROOT, SHIFTED_ROOT);
    chmodSync(join(layer, p), 0o755);
  }
  return layer;
}

describe('abuse: a new sandbox whose PID 1 dies during its set-up', () => {
  let d: AbuseDaemon;

  before(async () => {
    if (why) throw new Error(`this abuse test needs the native runtime: ${why}`);
    const stateDir = makeStateDir();
    writeImageVariant(stateDir, 'hooked', 'beef', {
      layers: [hookLayer(stateDir), ...defaultImage().layers],
    });
    d = await startDaemon({
      stateDir,
      env: { FORKBOX_SANDBOX_START_TIMEOUT_MS: TEN_MINUTES, FORKBOX_AGENT_FORK_TIMEOUT_MS: TEN_MINUTES },
    });
    await d.api.defineTemplate({ name: 'diehook', image: 'hooked', prewarm: ['forkbox_test_diehook'] });
  });
  after(async () => {
    await d?.stop();
  });

  it('fails the create at once, naming the cause, and leaves nothing behind', async () => {
    const err = await createOutcome(d, { template: 'diehook' }, 'the create to fail after its sandbox died');
    assert.ok(err instanceof Error, `the create did not fail: ${String(err)}`);
    assert.equal(err.code, 'sandbox_gone', err.message);
    assert.match(err.message, /died during its set-up: .*before it (could greet|greeted) the host/);
    const failed = (await d.api.listSandboxes({ all: true })).filter((s) => s.image === 'hooked');
    assert.equal(failed.length, 1);
    assert.equal(failed[0]?.state, 'failed');
    assert.match(failed[0]?.endReason ?? '', /died during its set-up/);
    assert.deepEqual(leftovers(d.stateDir), [], 'nothing of the sandbox is left');
    // The daemon and sound templates are unaffected.
    const ok = await d.api.createSandbox({});
    assert.equal((await d.api.exec(ok.id, { argv: ['echo', 'ok'] })).stdout, 'ok\n');
  });
});
