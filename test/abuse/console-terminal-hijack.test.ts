/**
 * Attack (one console user against another's terminal, and a flood of keystrokes): alice opens a
 * terminal on her sandbox in the web console; bob, logged in to the same console as another tenant,
 * learns her shell's exec id and POSTs keystrokes, resizes and opens its output stream; then alice's own
 * page sends one oversized keystroke request, and opens more terminals than a sandbox may have.
 * Precedent: web terminals that keyed sessions by a guessable or leaked id alone (CWE-639, authorization
 * bypass through a user-controlled key; e.g. session hijacking in browser-based SSH consoles).
 *
 * Contained when: every one of bob's requests is "not found" (404) and nothing he typed reached alice's
 * shell (its output never shows his marker), an oversized request is refused (413) without reaching the
 * shell, and the fifth terminal of one sandbox is refused (429).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Listener } from '../../src/transports/http-listener.ts';
import { consoleCookieAt } from '../helpers/console-login.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import { startTenantListener } from '../helpers/tenant-listener.ts';

const skip = nativeUnavailable();
const ALICE = 'tok-alice-terminal-0a1b2c3d4e5f6a7b';
const BOB = 'tok-bob-terminal-7b6a5f4e3d2c1b0a';

describe('abuse: hijacking another tenant’s console terminal', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let listener: Listener;
  let base = '';
  let sandbox = '';
  let exec = '';

  const cookies = new Map<string, string>();
  /** A console request as a browser on the console's page sends it: the session cookie and our Origin. */
  const consoleReq = async (
    token: string,
    method: string,
    path: string,
    body?: string,
    type = 'application/json',
  ) =>
    fetch(`${base}/console${path}`, {
      method,
      headers: { cookie: await sessionOf(token), origin: base, 'content-type': type },
      ...(body === undefined ? {} : { body }),
    });

  async function sessionOf(token: string): Promise<string> {
    const have = cookies.get(token);
    if (have) return have;
    const made = await consoleCookieAt(base, token);
    cookies.set(token, made);
    return made;
  }

  before(async () => {
    fx = await openNative();
    ({ listener, base } = await startTenantListener(fx, { alice: ALICE, bob: BOB }));
    sandbox = (await fx.opened.engine.scoped({ tenant: 'alice' }).createSandbox({})).id;
    const r = await consoleReq(ALICE, 'POST', `/sandboxes/${sandbox}/terminal`, '{"rows":24,"cols":80}');
    assert.equal(r.status, 201, await r.clone().text());
    exec = ((await r.json()) as { exec: string }).exec;
  });
  after(async () => {
    await listener?.close(2000);
    await fx?.close();
  });

  it('bob can neither type into, resize nor read alice’s shell', async () => {
    const t = `/sandboxes/${sandbox}/terminal/${exec}`;
    const tries = [
      await consoleReq(BOB, 'POST', `${t}/input`, 'echo bob-was-here\n', 'text/plain'),
      await consoleReq(BOB, 'POST', `${t}/resize`, '{"rows":1,"cols":1}'),
      await consoleReq(BOB, 'GET', `${t}/events`),
      await consoleReq(BOB, 'GET', `/sandboxes/${sandbox}/terminal`),
    ];
    assert.deepEqual(
      tries.map((r) => r.status),
      [404, 404, 404, 404],
    );
    // Alice's shell: her marker arrives, bob's never did.
    const mine = await consoleReq(ALICE, 'POST', `${t}/input`, 'echo "alice-""was-here"\n', 'text/plain');
    assert.equal(mine.status, 200);
    const api = fx.opened.engine.scoped({ tenant: 'alice' });
    let seen = '';
    let seq = -1;
    for (const end = Date.now() + 15_000; !seen.includes('alice-was-here') && Date.now() < end; ) {
      const p = await api.pollExec(sandbox, exec, { afterSeq: seq, waitMs: 1000 });
      for (const c of p.chunks) {
        seq = Math.max(seq, c.seq);
        seen += c.data;
      }
    }
    assert.match(seen, /alice-was-here/);
    assert.doesNotMatch(seen, /bob-was-here/);
  });

  it('an oversized keystroke request and a fifth terminal are refused', async () => {
    const big = await consoleReq(
      ALICE,
      'POST',
      `/sandboxes/${sandbox}/terminal/${exec}/input`,
      `echo ${'x'.repeat(70 * 1024)}\n`,
      'text/plain',
    );
    assert.equal(big.status, 413);
    const more = [];
    for (let i = 0; i < 4; i++)
      more.push(await consoleReq(ALICE, 'POST', `/sandboxes/${sandbox}/terminal`, '{"rows":24,"cols":80}'));
    assert.deepEqual(
      more.map((r) => r.status),
      [201, 201, 201, 429],
    );
  });
});
