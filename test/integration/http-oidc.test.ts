/**
 * OIDC bearer tokens end to end: a real `forkbox serve` with a token file and `--oidc-issuer` pointing at
 * a real OpenID Connect provider (oidc-provider, test/helpers/oidc-provider.ts) on loopback, tokens got
 * from it by the client_credentials grant. A good token works for REST and /mcp as the tenant in its
 * claim; expired, wrong-audience, wrong-issuer, unsigned (`alg: none`), HS256 signed with the public key,
 * not-yet-valid, tampered, rotated-away-key and tenant-less tokens are 401 with a WWW-Authenticate reason;
 * static tokens keep working; after a key rotation the new key's tokens work without a restart. A
 * daemon whose issuer does not answer at start still starts, serves static tokens, and answers JWTs 503.
 */
import assert from 'node:assert/strict';
import { createHmac, createPublicKey } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { decodeJwt, SignJWT } from 'jose';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';
import { AUDIENCE, providerUnavailable, startProvider, type TestProvider } from '../helpers/oidc-provider.ts';
import { waitFor } from '../helpers/wait-for.ts';

const skip = nativeUnavailable() ?? providerUnavailable();
const STATIC = 'tok-carol-0c1d2e3f4a5b6c7d8e9f';
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

async function call(base: string, method: string, path: string, token?: string, body?: unknown) {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await r.text();
  return {
    status: r.status,
    challenge: r.headers.get('www-authenticate') ?? '',
    text,
    json: (text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : undefined) as unknown,
  };
}

function writeTokens(stateDir: string): string {
  const file = join(stateDir, 'tokens');
  writeFileSync(file, `${STATIC} carol\n`, { mode: 0o600 });
  return file;
}

describe('serve --oidc-issuer: JWTs from a real OIDC provider', { skip: skip ?? false }, () => {
  let provider: TestProvider;
  let impostor: TestProvider;
  let stateDir: string;
  let daemon: ServedDaemon | undefined;
  let base = '';
  const names = (list: unknown) => (list as { name?: string }[]).map((s) => s.name);
  const refusedWith = async (token: string, reason: RegExp) => {
    const r = await call(base, 'GET', '/v1/sandboxes', token);
    assert.equal(r.status, 401, r.text);
    assert.match(r.challenge, /^Bearer realm="forkbox", error="invalid_token", error_description="[^"]+"$/);
    assert.match(r.challenge, reason);
    assert.equal((r.json as { error: { code: string } }).error.code, 'unauthenticated');
    return r;
  };

  before(async () => {
    provider = await startProvider();
    // Another issuer holding the same keys: its tokens verify, but name the wrong issuer.
    impostor = await startProvider({ keys: provider.keys });
    stateDir = makeStateDir();
    daemon = await startServe(stateDir, [
      '--token-file',
      writeTokens(stateDir),
      '--oidc-issuer',
      provider.issuer,
      '--oidc-audience',
      AUDIENCE,
      '--oidc-tenant-claim',
      'tenant',
      '--oidc-clock-skew',
      '0',
      '--oidc-jwks-cooldown',
      '1s',
    ]);
    base = daemon.url;
  });
  after(async () => {
    await stopServeAndClean(daemon?.child, stateDir);
    await provider?.stop();
    await impostor?.stop();
  });

  it('the daemon says it discovered the issuer', () => {
    assert.match(daemon?.log() ?? '', /OIDC issuer discovered/);
    assert.match(daemon?.log() ?? '', /"auth":"token file \+ oidc"/);
  });

  it('a provider token works for REST as the tenant in its claim (RS256 and ES256)', async () => {
    const alice = await provider.token('alice');
    assert.equal(decodeJwt(alice).tenant, 'alice');
    const c = await call(base, 'POST', '/v1/sandboxes', alice, { name: 'alice-rest' });
    assert.equal(c.status, 201, c.text);
    const id = (c.json as { id: string }).id;
    const e = await call(base, 'POST', `/v1/sandboxes/${id}/exec`, alice, {
      argv: ['python3', '-c', 'print(6*7)'],
    });
    assert.equal((e.json as { stdout: string }).stdout, '42\n');
    const es = await provider.token('alice', 'urn:forkbox:api:es256');
    assert.deepEqual(names((await call(base, 'GET', '/v1/sandboxes', es)).json), ['alice-rest']);
    // Bob (another client of the same issuer) and carol (the token file) do not see it.
    const bob = await provider.token('bob');
    assert.deepEqual(names((await call(base, 'GET', '/v1/sandboxes', bob)).json), []);
    assert.equal((await call(base, 'GET', `/v1/sandboxes/${id}`, bob)).status, 404);
    const carol = await call(base, 'GET', '/v1/sandboxes', STATIC);
    assert.equal(carol.status, 200, 'the static token still works');
    assert.deepEqual(names(carol.json), []);
    assert.equal((await call(base, 'DELETE', `/v1/sandboxes/${id}`, alice)).status, 200);
  });

  it('a provider token works for /mcp, as the same tenant', async () => {
    const bob = await provider.token('bob');
    const client = new Client({ name: 'http-oidc-test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: { token: async () => bob } }),
    );
    try {
      const r = (await client.callTool({
        name: 'sandbox_create',
        arguments: { name: 'bob-mcp' },
      })) as CallToolResult;
      assert.notEqual(r.isError, true, JSON.stringify(r.content));
    } finally {
      await client.close();
    }
    const listed = (await call(base, 'GET', '/v1/sandboxes', bob)).json as { id: string; name: string }[];
    assert.deepEqual(names(listed), ['bob-mcp']);
    const alice = await provider.token('alice');
    assert.deepEqual(names((await call(base, 'GET', '/v1/sandboxes', alice)).json), []);
    assert.equal((await call(base, 'DELETE', `/v1/sandboxes/${listed[0]?.id}`, bob)).status, 200);
    // A refused token is refused on /mcp too.
    const stranger = await impostor.token('bob');
    const m = await call(base, 'POST', '/mcp', stranger, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    assert.equal(m.status, 401);
  });

  it('expired, wrong audience, wrong issuer and tenant-less tokens are 401', async () => {
    const short = await provider.token('alice', 'urn:forkbox:api:short');
    const exp = decodeJwt(short).exp as number;
    await waitFor(() => Math.floor(Date.now() / 1000) > exp, { what: 'the 1 s token to be past its exp' });
    await refusedWith(short, /expired/);
    await refusedWith(await provider.token('alice', 'urn:other:api'), /another audience/);
    await refusedWith(await impostor.token('alice'), /another issuer/);
    await refusedWith(await provider.token('no-tenant'), /'tenant' claim is missing/);
  });

  it('alg none, HS256 keyed with the public key, a future nbf and a tampered payload are 401', async () => {
    const good = await provider.token('alice');
    const [header, payload, signature] = good.split('.') as [string, string, string];
    const claims = decodeJwt(good);
    await refusedWith(`${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`, /algorithm/);
    // Algorithm confusion: an HMAC whose secret is the issuer's public key, which anyone can fetch.
    const pem = createPublicKey({ key: provider.keys.keys[0] as never, format: 'jwk' }).export({
      type: 'spki',
      format: 'pem',
    });
    const hsInput = `${b64({ alg: 'HS256', typ: 'JWT', kid: provider.keys.rsaKid })}.${payload}`;
    await refusedWith(
      `${hsInput}.${createHmac('sha256', pem).update(hsInput).digest('base64url')}`,
      /algorithm/,
    );
    const notYet = await new SignJWT({ ...claims, nbf: Math.floor(Date.now() / 1000) + 3600 })
      .setProtectedHeader({ alg: 'RS256', kid: provider.keys.rsaKid })
      .sign(provider.keys.rsa);
    await refusedWith(notYet, /not valid yet/);
    const tampered = `${header}.${b64({ ...claims, tenant: 'bob' })}.${signature}`;
    await refusedWith(tampered, /signature/);
    // The same claims, properly signed with the issuer's key, are accepted (the checks above are the cause).
    const resigned = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: provider.keys.rsaKid })
      .sign(provider.keys.rsa);
    assert.equal((await call(base, 'GET', '/v1/sandboxes', resigned)).status, 200);
    const none = await call(base, 'GET', '/v1/sandboxes');
    assert.equal(none.status, 401);
    assert.equal(none.challenge, 'Bearer realm="forkbox"');
  });

  it('after a key rotation: new-key tokens work without a restart, old-key tokens are 401', async () => {
    const before = await provider.token('alice');
    assert.equal((await call(base, 'GET', '/v1/sandboxes', before)).status, 200);
    await provider.rotate();
    const fresh = await provider.token('alice');
    assert.notEqual(
      (JSON.parse(Buffer.from(fresh.split('.')[0] as string, 'base64url').toString()) as { kid: string }).kid,
      (JSON.parse(Buffer.from(before.split('.')[0] as string, 'base64url').toString()) as { kid: string })
        .kid,
    );
    // The unknown kid makes the daemon fetch the JWKS again once its cooldown (1 s here) has passed.
    await waitFor(async () => (await call(base, 'GET', '/v1/sandboxes', fresh)).status === 200, {
      what: "the rotated-in key's token to be accepted",
      intervalMs: 200,
    });
    await refusedWith(before, /signature/);
    assert.equal(daemon?.child.exitCode, null, 'the same daemon');
  });
});

/** A loopback port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

describe('serve --oidc-issuer: an issuer that does not answer at start', { skip: skip ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;
  after(() => stopServeAndClean(daemon?.child, stateDir));

  it('the daemon starts and says so; static tokens work; JWTs are 503, not accepted', async () => {
    stateDir = makeStateDir();
    const issuer = `http://127.0.0.1:${await closedPort()}`;
    daemon = await startServe(stateDir, [
      '--token-file',
      writeTokens(stateDir),
      '--oidc-issuer',
      issuer,
      '--oidc-audience',
      AUDIENCE,
    ]);
    assert.match(daemon.log(), /OIDC discovery at .* failed/);
    assert.equal((await call(daemon.url, 'GET', '/v1/sandboxes', STATIC)).status, 200);
    const jwt = `${b64({ alg: 'RS256', kid: 'k' })}.${b64({ iss: issuer, aud: AUDIENCE, sub: 'x' })}.c2ln`;
    const r = await call(daemon.url, 'GET', '/v1/sandboxes', jwt);
    assert.equal(r.status, 503, r.text);
    assert.equal((r.json as { error: { code: string } }).error.code, 'unavailable');
  });
});
