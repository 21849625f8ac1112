/**
 * Attack (a broken image or host set-up rather than a hostile act): the template's PID 1 dies while it
 * sets itself up, before its agent connects — here an image whose `python3` is not Python, as an image
 * built or imported wrongly has. Precedent: issue #11 item 11 — under `umask 077` the template's child died
 * during set-up, nobody noticed, and every create hung until a 10-second timeout; the class is every
 * supervisor that waits on a socket instead of on its child (systemd's `Type=notify` services that die
 * before `READY=1` are reported at once for this reason).
 *
 * Contained when the create fails as soon as the child is dead — well before the daemon's own start
 * deadlines, which this test raises to ten minutes, so only noticing the death can end it in time — with
 * an error naming the cause (the agent exited before it connected, and its log), the sandbox is recorded
 * `failed` with that reason, nothing of the template or the sandbox is left on the host, and sandboxes of
 * a sound image still work.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type AbuseDaemon, startDaemon } from '../helpers/abuse.ts';
import { leftovers } from '../helpers/leftovers.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';
import { createOutcome, TEN_MINUTES, writeImageVariant } from '../helpers/setup-death.ts';

const why = nativeUnavailable();

describe('abuse: a template whose PID 1 dies during its set-up', () => {
  let d: AbuseDaemon;

  before(async () => {
    if (why) throw new Error(`this abuse test needs the native runtime: ${why}`);
    const stateDir = makeStateDir();
    // The default image's files, with a `python3` that is a shell: it exits at once on Python's -I flag.
    writeImageVariant(stateDir, 'nopython', 'dead', { python: '/bin/sh' });
    d = await startDaemon({
      stateDir,
      env: {
        FORKBOX_TEMPLATE_START_TIMEOUT_MS: TEN_MINUTES,
        FORKBOX_SANDBOX_START_TIMEOUT_MS: TEN_MINUTES,
      },
    });
  });
  after(async () => {
    await d?.stop();
  });

  it('fails the create at once, naming the cause, and leaves nothing behind', async () => {
    const err = await createOutcome(d, { image: 'nopython' }, 'the create to fail after its template died');
    assert.ok(err instanceof Error, `the create did not fail: ${String(err)}`);
    assert.match(err.message, /agent exited before it connected to the host/);
    assert.equal(err.code, 'requirement_missing', 'a broken image, not a forkbox bug');
    assert.match(err.message, /Syntax error/, 'the end of the container log names the cause');
    const failed = (await d.api.listSandboxes({ all: true })).filter((s) => s.image === 'nopython');
    assert.equal(failed.length, 1);
    assert.equal(failed[0]?.state, 'failed');
    assert.match(failed[0]?.endReason ?? '', /agent exited before it connected/);
    assert.deepEqual(leftovers(d.stateDir), [], 'nothing of the template or the sandbox is left');
    // The daemon and sound images are unaffected.
    const ok = await d.api.createSandbox({});
    assert.equal((await d.api.exec(ok.id, { argv: ['echo', 'ok'] })).stdout, 'ok\n');
  });
});
