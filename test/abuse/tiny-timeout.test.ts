/**
 * Attack (a careless or hostile client): ask for a timeout below the smallest one the agent can honour,
 * hoping it is read as "no timeout" — a command that then runs for ever past its caller's budget.
 * Precedent: issue #11 item 16 — a timeout of 0.001 s was rounded to 0 ms, which the agent reads as "no
 * timeout"; the same class as APIs where `timeout=0` silently means "wait for ever" (Python's socket and
 * subprocess APIs, curl's --max-time 0).
 *
 * Contained when: every door (the daemon's API, REST over the socket through the daemon client, and the
 * CLI) refuses a timeout under the limit with `invalid_argument` naming the smallest value, for commands
 * and for Python code alike, and runs nothing; the smallest allowed timeout really ends a command.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LIMITS } from '../../src/domain/limits.ts';
import { type AbuseDaemon, startDaemon } from '../helpers/abuse.ts';
import { ROOT } from '../helpers/daemon.ts';
import { nativeUnavailable } from '../helpers/native.ts';

const why = nativeUnavailable();
const MIN = LIMITS.timeoutSeconds.min;

async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await p;
  } catch (e) {
    return e as { code: string; message: string };
  }
  assert.fail('the call was accepted');
}

describe('abuse: a timeout below the smallest supported one', () => {
  let d: AbuseDaemon;
  let id = '';

  before(async () => {
    if (why) throw new Error(`this abuse test needs the native runtime: ${why}`);
    d = await startDaemon();
    id = (await d.api.createSandbox({})).id;
  });
  after(async () => {
    await d?.stop();
  });

  it('is refused for commands and code, and nothing runs', async () => {
    for (const t of [0.001, MIN / 2, 0]) {
      const e = await refusal(d.api.exec(id, { cmd: 'touch /tmp/ran', timeoutSeconds: t }));
      assert.equal(e.code, 'invalid_argument', `${t}: ${e.message}`);
      assert.match(e.message, new RegExp(`${MIN}`), `${t}: the message names the smallest timeout`);
      const c = await refusal(d.api.runCode(id, { code: 'open("/tmp/ran", "w")', timeoutSeconds: t }));
      assert.equal(c.code, 'invalid_argument', `${t}: ${c.message}`);
    }
    const ran = await d.api.exec(id, { cmd: 'test -e /tmp/ran && echo ran || echo nothing' });
    assert.equal(ran.stdout, 'nothing\n');
  });

  it('is refused by the CLI too', () => {
    const r = spawnSync(
      process.execPath,
      [join(ROOT, 'bin', 'forkbox.js'), 'exec', '--timeout', '1ms', id, '--', 'true'],
      { encoding: 'utf8', env: { ...process.env, FORKBOX_STATE_DIR: d.stateDir } },
    );
    assert.notEqual(r.status, 0, r.stdout);
    assert.match(r.stderr, /timeout/i);
  });

  it('the smallest allowed timeout ends a command that would run for ever', async () => {
    const o = await d.api.exec(id, { cmd: 'sleep 1000', timeoutSeconds: MIN });
    assert.equal(o.timedOut, true);
  });
});
