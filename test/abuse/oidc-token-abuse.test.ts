/**
 * Attack: turn the HTTP listener's OIDC verifier against the daemon or the issuer.
 *  - A flood of JWTs with made-up key ids, each of which could make the daemon fetch the issuer's JWKS
 *    again: an amplification onto the issuer and a stall of the daemon (precedent: node-jwks-rsa's
 *    `jwksRequestsPerMinute` rate limit, added because unknown-`kid` tokens triggered a fetch each).
 *  - A token far larger than any real one, to spend the daemon's CPU on base64 and JSON before it is
 *    refused (precedent: jose's own JWE decompression bomb, CVE-2024-28176: unbounded work on a token).
 *  - An issuer whose JWKS endpoint hangs, or answers with an endless body: without a deadline and a size
 *    bound every request presenting a JWT would wait forever, or the daemon would buffer without limit.
 *
 * Contained when: the flood costs the issuer at most one JWKS fetch per cooldown and every token is 401;
 * a token over OIDC.tokenBytes is 401 "too long" without any fetch; a hanging or oversized JWKS answers the
 * request 503 `unavailable` (bounded by OIDC.fetchMs and OIDC.documentBytes), the daemon keeps serving,
 * and its cached keys keep working when the issuer recovers.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { OIDC } from '../../src/domain/limits.ts';
import { type AbuseDaemon, startDaemon } from '../helpers/abuse.ts';
import { nativeUnavailable } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const why = nativeUnavailable();
const AUD = 'urn:forkbox:abuse';
const FLOOD = 40;

type Mode = 'ok' | 'hang' | 'endless';

/** An issuer under the test's control: discovery, and a JWKS that can behave, hang or never end. */
async function hostileIssuer() {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = 'good-key';
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] };
  let mode: Mode = 'ok';
  let jwksFetches = 0;
  let issuer = '';
  const server: Server = createServer((req, res) => {
    if (req.url === '/.well-known/openid-configuration') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
      return;
    }
    if (req.url !== '/jwks') {
      res.statusCode = 404;
      res.end();
      return;
    }
    jwksFetches++;
    if (mode === 'hang') return; // never answers
    res.setHeader('content-type', 'application/json');
    if (mode === 'ok') {
      res.end(JSON.stringify(jwks));
      return;
    }
    // Endless: keys padding on and on, until the client goes away.
    res.write('{"keys":[');
    const chunk = `${JSON.stringify(jwks.keys[0])},`.repeat(64);
    const pump = () => {
      while (res.write(chunk)) if (res.destroyed) return;
      res.once('drain', pump);
    };
    res.on('close', () => res.removeAllListeners('drain'));
    pump();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const sign = (claims: Record<string, unknown>, useKid = kid) =>
    new SignJWT({ iss: issuer, aud: AUD, sub: 'mallory', ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: useKid })
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
  return {
    get issuer() {
      return issuer;
    },
    setMode: (m: Mode) => {
      mode = m;
    },
    fetches: () => jwksFetches,
    sign,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

async function status(base: string, token: string) {
  const r = await fetch(`${base}/v1/sandboxes`, { headers: { authorization: `Bearer ${token}` } });
  const body = await r.text();
  return { status: r.status, challenge: r.headers.get('www-authenticate') ?? '', body };
}

describe('abuse: hostile tokens and a hostile issuer against the OIDC verifier', {
  skip: why ?? false,
}, () => {
  let idp: Awaited<ReturnType<typeof hostileIssuer>>;
  let daemon: AbuseDaemon | undefined;
  let slow: AbuseDaemon | undefined;

  before(async () => {
    idp = await hostileIssuer();
    const args = ['--oidc-issuer', idp.issuer, '--oidc-audience', AUD];
    // The default cooldown (30 s) for the flood; 1 s for the issuer that turns hostile later.
    daemon = await startDaemon({ args });
    slow = await startDaemon({ args: [...args, '--oidc-jwks-cooldown', '1s'] });
  });
  after(async () => {
    await daemon?.stop();
    await slow?.stop();
    await idp?.close();
  });

  it('a flood of made-up key ids costs the issuer at most one JWKS fetch; every token is 401', async () => {
    const base = daemon?.url as string;
    assert.equal((await status(base, await idp.sign({ tenant: 'x' }))).status, 200, 'a good token works');
    const before = idp.fetches();
    // One after another: each token arrives after the previous answer, so only the cooldown (not the
    // sharing of a fetch in flight) stands between each of them and a fetch of its own.
    for (let i = 0; i < FLOOD; i++) {
      const a = await status(base, await idp.sign({}, `made-up-${randomUUID()}`));
      assert.equal(a.status, 401, a.body);
      assert.match(a.challenge, /error="invalid_token", error_description="its signature does not verify/);
    }
    assert.ok(idp.fetches() - before <= 1, `${idp.fetches() - before} JWKS fetches for ${FLOOD} tokens`);
  });

  it('a token over the size bound is 401 "too long", with no fetch', async () => {
    const before = idp.fetches();
    const huge = await idp.sign({ pad: 'x'.repeat(OIDC.tokenBytes) }, `made-up-${randomUUID()}`);
    const a = await status(daemon?.url as string, huge);
    assert.equal(a.status, 401, a.body);
    assert.match(a.challenge, /error_description="it is too long"/);
    assert.equal(idp.fetches(), before);
  });

  it('a JWKS that hangs, then one that never ends: 503 within the bounds; cached keys still work', async () => {
    const base = slow?.url as string;
    const good = await idp.sign({});
    assert.equal((await status(base, good)).status, 200);
    for (const mode of ['hang', 'endless'] as const) {
      idp.setMode(mode);
      const before = idp.fetches();
      // An unknown kid forces a fetch once the 1 s cooldown has passed: wait for that fetch to be tried.
      const answer = await waitFor(
        async () => {
          const a = await status(base, await idp.sign({}, `rotated-${randomUUID()}`));
          return idp.fetches() > before ? a : undefined;
        },
        { what: `a JWKS fetch against the ${mode} issuer`, timeoutMs: 30_000, intervalMs: 300 },
      );
      assert.equal(answer.status, 503, answer.body);
      assert.match(answer.body, /"code":"unavailable"/);
      assert.doesNotMatch(answer.body, /127\.0\.0\.1|jwks|ERR_/i, 'no internals in the answer');
    }
    idp.setMode('ok');
    assert.equal((await status(base, good)).status, 200, 'the cached key still verifies');
    assert.equal(slow?.child.exitCode, null, 'the daemon kept running');
  });
});
