/**
 * The web console through app.request(), over the real engine (fake runtime): login and the cookie,
 * the cookie refused outside /console, Origin on POSTs, tenant scoping, the stream cap.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createHttpApp } from '../../src/protocol/http/app.ts';
import { guardConfig } from '../../src/protocol/http/guards.ts';
import { createTokenStore, parseTokenFile } from '../../src/protocol/http/tokens.ts';
import { consoleCookie } from '../helpers/console-login.ts';
import { createTestEngine } from '../helpers/test-engine.ts';
import { waitFor } from '../helpers/wait-for.ts';

const TOKEN_A = 'alice-token-0123456789abcdef';
const TOKEN_B = 'bob-token-0123456789abcdef';
const ORIGIN = 'http://127.0.0.1:7777';

const withHost = (init: RequestInit): RequestInit => ({
  ...init,
  headers: { host: '127.0.0.1:7777', ...(init.headers as Record<string, string>) },
});

function setup(maxStreamsPerTenant?: number) {
  const t = createTestEngine();
  const engine = {
    scoped: (ctx: Parameters<typeof t.scoped>[0]) => t.scoped(ctx),
    attachSession: (id: string) => t.engine.attachSession(id),
  };
  const tokens = createTokenStore(parseTokenFile(`${TOKEN_A} alice\n${TOKEN_B} bob\n`));
  const guard = guardConfig({ listenHost: '127.0.0.1', port: 7777 });
  const http = createHttpApp({
    engine,
    version: 't',
    tokens,
    guard: () => guard,
    ...(maxStreamsPerTenant ? { console: { maxStreamsPerTenant } } : {}),
  });
  const req = (method: string, path: string, headers: Record<string, string> = {}, body?: string) =>
    http.app.request(path, {
      method,
      headers: {
        host: '127.0.0.1:7777',
        ...(body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body }),
    });
  const as = async (token: string) => ({
    cookie: await consoleCookie((path, init) => http.app.request(path, withHost(init)), ORIGIN, token),
  });
  return { t, http, req, as };
}

describe('web console', () => {
  it('logs in with a valid token only, and sets the session cookie', async () => {
    const { req } = setup();
    const bad = await req('POST', '/console/login', { origin: ORIGIN }, 'token=wrong-token-0123456789');
    assert.equal(bad.status, 401);
    assert.equal(bad.headers.get('set-cookie'), null);
    const ok = await req('POST', '/console/login', { origin: ORIGIN }, `token=${TOKEN_A}`);
    assert.equal(ok.status, 303);
    assert.match(ok.headers.get('set-cookie') ?? '', /HttpOnly; SameSite=Strict/);
    assert.match(ok.headers.get('content-security-policy') ?? '', /script-src 'self'/);
  });

  it('sends a visitor without a session to the login page; the stream answers 401', async () => {
    const { req } = setup();
    const r = await req('GET', '/console');
    assert.equal(r.status, 303);
    assert.equal(r.headers.get('location'), '/console/login');
    assert.equal((await req('GET', '/console/events')).status, 401);
    assert.equal(
      (await req('GET', '/console', { cookie: 'forkbox_console=revoked-0123456789abc' })).status,
      303,
    );
  });

  it('ends the sessions of a token removed from the token file', async () => {
    const t = createTestEngine();
    let file = `${TOKEN_A} alice\n${TOKEN_B} bob\n`;
    const tokens = createTokenStore(parseTokenFile(file), () => parseTokenFile(file));
    const guard = guardConfig({ listenHost: '127.0.0.1', port: 7777 });
    const http = createHttpApp({
      engine: { scoped: t.scoped, attachSession: (id) => t.engine.attachSession(id) },
      version: 't',
      tokens,
      guard: () => guard,
    });
    const cookie = await consoleCookie(
      (path, init) => http.app.request(path, withHost(init)),
      ORIGIN,
      TOKEN_A,
    );
    const get = () => http.app.request('/console', { headers: { host: '127.0.0.1:7777', cookie } });
    assert.equal((await get()).status, 200);
    file = `${TOKEN_B} bob\n`;
    tokens.reload();
    const after = await get();
    assert.equal(after.status, 303);
    assert.equal(after.headers.get('location'), '/console/login');
  });

  it('needs no login on a listener without tokens (tenant default)', async () => {
    const t = createTestEngine();
    const guard = guardConfig({ listenHost: '127.0.0.1', port: 7777 });
    const http = createHttpApp({
      engine: { scoped: t.scoped, attachSession: (id) => t.engine.attachSession(id) },
      version: 't',
      guard: () => guard,
    });
    const r = await http.app.request('/console', { headers: { host: '127.0.0.1:7777' } });
    assert.equal(r.status, 200);
    assert.doesNotMatch(await r.text(), /Log out/);
  });

  it('never takes the cookie as an API credential', async () => {
    const { req, as } = setup();
    assert.equal((await req('GET', '/v1/sandboxes', await as(TOKEN_A))).status, 401);
    assert.equal((await req('POST', '/mcp', await as(TOKEN_A), '{}')).status, 401);
  });

  it('keeps the token in the daemon: the cookie is an opaque session id that logout revokes', async () => {
    const { req, as } = setup();
    const session = await as(TOKEN_A);
    assert.ok(!session.cookie.includes(TOKEN_A), session.cookie);
    assert.match(session.cookie, /^forkbox_console=[A-Za-z0-9_-]{43}$/);
    assert.notEqual((await as(TOKEN_A)).cookie, session.cookie, 'each login is a session of its own');
    assert.equal((await req('GET', '/console', session)).status, 200);
    assert.equal(
      (await req('GET', '/v1/sandboxes', { authorization: `Bearer ${session.cookie.split('=')[1]}` })).status,
      401,
    );
    assert.equal((await req('POST', '/console/logout', { ...session, origin: ORIGIN })).status, 303);
    const after = await req('GET', '/console', session);
    assert.equal(after.status, 303, 'the logged-out session id logs in no more');
    assert.equal(after.headers.get('location'), '/console/login');
    assert.equal((await req('GET', '/console', { cookie: `forkbox_console=${TOKEN_A}` })).status, 303);
  });

  it('refuses a POST without an Origin or with a foreign one', async () => {
    const { req, as } = setup();
    assert.equal((await req('POST', '/console/logout', await as(TOKEN_A))).status, 403);
    assert.equal(
      (await req('POST', '/console/logout', { ...(await as(TOKEN_A)), origin: 'http://evil.example' }))
        .status,
      403,
    );
    assert.equal(
      (await req('POST', '/console/logout', { ...(await as(TOKEN_A)), origin: ORIGIN })).status,
      303,
    );
  });

  it('shows a tenant its own sandboxes, and 404 for another tenant’s', async () => {
    const { t, req, as } = setup();
    const mine = await t.scoped({ tenant: 'alice' }).createSandbox({ name: 'alices-box' });
    const theirs = await t.scoped({ tenant: 'bob' }).createSandbox({ name: 'bobs-box' });
    const page = await (await req('GET', '/console', await as(TOKEN_A))).text();
    assert.match(page, new RegExp(mine.id));
    assert.match(page, /alices-box/);
    assert.doesNotMatch(page, /bobs-box/);
    const other = await req('GET', `/console/sandboxes/${theirs.id}`, await as(TOKEN_A));
    assert.equal(other.status, 404);
    assert.doesNotMatch(await other.text(), /bobs-box/);
  });

  it('caps the event streams per tenant (429 past the cap)', async () => {
    const { http, req, as } = setup(1);
    const first = await req('GET', '/console/events', await as(TOKEN_A));
    assert.equal(first.status, 200);
    assert.equal((await req('GET', '/console/events', await as(TOKEN_A))).status, 429);
    assert.equal((await req('GET', '/console/events', await as(TOKEN_B))).status, 200);
    await http.close();
    await first.body?.cancel();
  });

  it('frees a stream’s place when its client goes away', async () => {
    const { http, req, as } = setup(1);
    const first = await req('GET', '/console/events', await as(TOKEN_A));
    await first.body?.cancel();
    await waitFor(
      async () => {
        const r = await req('GET', '/console/events', await as(TOKEN_A));
        await r.body?.cancel();
        return r.status === 200;
      },
      { what: 'the first stream’s place is free', timeoutMs: 5000, intervalMs: 100 },
    );
    await http.close();
  });
});
