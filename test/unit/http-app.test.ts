/**
 * The TCP listener's app through app.request(), over the real engine (fake runtime): guards, bearer auth, tenant
 * mapping, admin routes, OpenAPI, metrics, audit and the per-tenant concurrency limit.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { memoryAuditLog } from '../../src/protocol/audit.ts';
import { createHttpApp } from '../../src/protocol/http/app.ts';
import { guardConfig } from '../../src/protocol/http/guards.ts';
import { createTokenStore, parseTokenFile } from '../../src/protocol/http/tokens.ts';
import type { CallerContext } from '../../src/service/engine.ts';
import { createTestEngine, type RecordedApi } from '../helpers/test-engine.ts';
import { waitFor } from '../helpers/wait-for.ts';

const TOKEN_A = 'alice-token-0123456789abcdef';
const TOKEN_B = 'bob-token-0123456789abcdef';

async function readAll(p: Response | Promise<Response>): Promise<Response> {
  const r = await p;
  return new Response(await r.arrayBuffer(), { status: r.status, headers: r.headers });
}

function setup(opts: { tokens?: boolean; maxConcurrency?: number } = {}) {
  const t = createTestEngine();
  const apis = new Map<string, RecordedApi>();
  const scopedCalls: CallerContext[] = [];
  const engine = {
    scoped(ctx: CallerContext) {
      scopedCalls.push(ctx);
      const api = t.scoped(ctx);
      apis.set(ctx.tenant, api);
      return api;
    },
    attachSession: (id: string) => t.engine.attachSession(id),
  };
  const audit = memoryAuditLog();
  const tokens =
    opts.tokens === false
      ? undefined
      : createTokenStore(parseTokenFile(`# test\n${TOKEN_A} alice\n\n${TOKEN_B} bob\n`));
  const guard = guardConfig({ listenHost: '127.0.0.1', port: 7777 });
  const http = createHttpApp({
    engine,
    version: '1.2.3',
    tokens,
    guard: () => guard,
    audit,
    maxConcurrency: opts.maxConcurrency,
  });
  const req = (
    method: string,
    path: string,
    o: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
  ) =>
    // Read the body at once, as a server would: slots, metrics and audit lines end with the body.
    readAll(
      http.app.request(path, {
        method,
        headers: {
          host: '127.0.0.1:7777',
          'content-type': 'application/json',
          ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
          ...o.headers,
        },
        ...(o.body === undefined ? {} : { body: JSON.stringify(o.body) }),
      }),
    );
  return { http, apis, audit, req, scopedCalls, engine };
}

describe('http app: guards', () => {
  it('answers 403 to a foreign Origin and a foreign Host, before authentication', async () => {
    const { req } = setup();
    const o = await req('GET', '/v1/sandboxes', {
      token: TOKEN_A,
      headers: { origin: 'http://evil.example' },
    });
    assert.equal(o.status, 403);
    const body = (await o.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'permission_denied');
    assert.match(body.error.message, /Origin/);
    const h = await req('GET', '/healthz', { headers: { host: 'evil.example:7777' } });
    assert.equal(h.status, 403);
    const mcp = await req('POST', '/mcp', { headers: { origin: 'https://evil.example' }, body: {} });
    assert.equal(mcp.status, 403);
  });

  it('accepts our own origin and the localhost names', async () => {
    const { req } = setup();
    for (const host of ['localhost:7777', '127.0.0.1:7777', '[::1]:7777']) {
      const r = await req('GET', '/healthz', { headers: { host, origin: `http://${host}` } });
      assert.equal(r.status, 200, host);
    }
    const wrongPort = await req('GET', '/healthz', { headers: { origin: 'http://localhost:3000' } });
    assert.equal(wrongPort.status, 403, 'another local web app is another origin');
  });
});

describe('http app: bearer tokens and tenants', () => {
  it('needs a token: 401 with WWW-Authenticate: Bearer; healthz and openapi stay open', async () => {
    const { req } = setup();
    const r = await req('GET', '/v1/sandboxes');
    assert.equal(r.status, 401);
    assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer /);
    assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'unauthenticated');
    const bad = await req('GET', '/v1/sandboxes', { token: 'not-a-real-token-at-all' });
    assert.equal(bad.status, 401);
    assert.match(bad.headers.get('www-authenticate') ?? '', /invalid_token/);
    assert.equal((await req('POST', '/mcp', { body: {} })).status, 401);
    assert.equal((await req('GET', '/metrics')).status, 401);
    assert.equal((await req('GET', '/healthz')).status, 200);
    assert.equal((await req('GET', '/openapi.json')).status, 200);
  });

  it("maps each token to its tenant: B does not see or touch A's sandbox", async () => {
    const { req, scopedCalls } = setup();
    const c = await req('POST', '/v1/sandboxes', { token: TOKEN_A, body: { name: 'box' } });
    assert.equal(c.status, 201);
    const { id } = (await c.json()) as { id: string };
    assert.equal((await req('GET', `/v1/sandboxes/${id}`, { token: TOKEN_A })).status, 200);
    const list = (await (await req('GET', '/v1/sandboxes', { token: TOKEN_B })).json()) as unknown[];
    assert.deepEqual(list, []);
    assert.equal((await req('GET', `/v1/sandboxes/${id}`, { token: TOKEN_B })).status, 404);
    assert.equal((await req('DELETE', `/v1/sandboxes/${id}`, { token: TOKEN_B })).status, 404);
    assert.equal(
      (await req('POST', `/v1/sandboxes/${id}/exec`, { token: TOKEN_B, body: { argv: ['ls'] } })).status,
      404,
    );
    assert.deepEqual(new Set(scopedCalls.map((s) => s.tenant)), new Set(['alice', 'bob']));
  });

  it('without a token file every caller is tenant default', async () => {
    const { req, apis } = setup({ tokens: false });
    assert.equal((await req('POST', '/v1/sandboxes', { body: {} })).status, 201);
    assert.deepEqual([...apis.keys()], ['default']);
  });

  it('does not serve host administration routes, and leaves them out of /openapi.json', async () => {
    const { req } = setup();
    const r = await req('POST', '/v1/images/import', { token: TOKEN_A, body: { name: 'x', source: '/etc' } });
    assert.equal(r.status, 403);
    assert.match(((await r.json()) as { error: { message: string } }).error.message, /local socket/);
    assert.equal((await req('POST', '/v1/gc', { token: TOKEN_A })).status, 403);
    const doc = (await (await req('GET', '/openapi.json')).json()) as {
      openapi: string;
      paths: Record<string, Record<string, unknown>>;
    };
    assert.equal(doc.openapi, '3.1.0');
    assert.ok(doc.paths['/v1/sandboxes']?.post);
    assert.ok(doc.paths['/v1/sandboxes/{id}/exec']?.post);
    assert.ok(doc.paths['/v1/sandboxes/{id}/files/content']?.put);
    assert.equal(doc.paths['/v1/images/import'], undefined);
    assert.equal(doc.paths['/v1/gc'], undefined);
  });
});

describe('http app: limits, metrics, audit', () => {
  it('refuses more than max-concurrency requests in flight per tenant with 429 resource_exhausted', async () => {
    const { req, engine } = setup({ maxConcurrency: 2 });
    // Patched before the app first wraps this tenant's API.
    const api = engine.scoped({ tenant: 'alice' });
    await api.createSandbox({ name: 'a' });
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const original = api.getSandbox.bind(api);
    let entered = 0;
    api.getSandbox = async (id, o) => {
      entered++;
      await gate;
      return original(id, o);
    };
    const slow = [
      req('GET', '/v1/sandboxes/a', { token: TOKEN_A }),
      req('GET', '/v1/sandboxes/a', { token: TOKEN_A }),
    ];
    await waitFor(() => entered === 2, { what: 'both slow requests hold their slots' });
    const third = await req('GET', '/v1/sandboxes/a', { token: TOKEN_A });
    assert.equal(third.status, 429);
    const body = (await third.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'resource_exhausted');
    assert.match(body.error.message, /too many requests in flight/);
    // Another tenant is not affected.
    assert.equal((await req('GET', '/v1/sandboxes', { token: TOKEN_B })).status, 200);
    release();
    for (const r of await Promise.all(slow)) assert.equal(r.status, 200);
    assert.equal((await req('GET', '/v1/sandboxes/a', { token: TOKEN_A })).status, 200);
  });

  it('refuses oversized bodies with 413 too_large', async () => {
    const { req } = setup();
    const r = await req('POST', '/v1/sandboxes', {
      token: TOKEN_A,
      body: { name: 'x'.repeat(2 * 1024 * 1024) },
    });
    assert.equal(r.status, 413);
    assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'too_large');
  });

  it('exposes the metrics by name, and they move', async () => {
    const { req } = setup();
    await req('POST', '/v1/sandboxes', { token: TOKEN_A, body: { name: 'm' } });
    await req('POST', '/v1/sandboxes/m/exec', { token: TOKEN_A, body: { argv: ['echo', 'hi'] } });
    await req('GET', '/v1/sandboxes/nope', { token: TOKEN_A });
    const r = await req('GET', '/metrics', { token: TOKEN_B });
    assert.equal(r.status, 200);
    const text = await r.text();
    assert.ok(!/alice|bob/.test(text), 'no tenant names: any tenant may read /metrics');
    assert.match(text, /forkbox_sandboxes\{state="running"\} 1/);
    assert.match(text, /forkbox_sandbox_creates_total 1/);
    assert.match(text, /forkbox_execs_total\{kind="exec"\} 1/);
    assert.match(text, /forkbox_exec_duration_seconds_count\{kind="exec"\} 1/);
    assert.match(text, /forkbox_errors_total\{code="not_found"\} 1/);
    assert.match(
      text,
      /forkbox_http_requests_total\{method="POST",route="\/v1\/sandboxes\/:id\/exec",status="200"\} 1/,
    );
    assert.match(
      text,
      /forkbox_http_requests_total\{method="GET",route="\/v1\/sandboxes\/:id",status="404"\} 1/,
    );
  });

  it('audits each request with tenant, route, sandbox, outcome and duration — never tokens or contents', async () => {
    const { req, audit } = setup();
    await req('POST', '/v1/sandboxes', {
      token: TOKEN_A,
      body: { name: 'aud', env: { SECRET: 'hunter2-env' } },
    });
    await req('POST', '/v1/sandboxes/aud/exec', {
      token: TOKEN_A,
      body: { argv: ['echo', 'hunter2-argv'], stdin: Buffer.from('hunter2-stdin').toString('base64') },
    });
    await req('GET', '/v1/sandboxes/aud', { token: TOKEN_B });
    await req('GET', '/v1/sandboxes', { token: 'wrong-token-hunter2-xyz' });
    const all = JSON.stringify(audit.lines);
    for (const secret of ['hunter2', TOKEN_A, TOKEN_B, 'alice-token'])
      assert.ok(!all.includes(secret), secret);
    const [create, exec, denied, unauth] = audit.lines;
    assert.deepEqual(Object.keys(create ?? {}).sort(), [
      'door',
      'duration_ms',
      'outcome',
      'route',
      'status',
      'tenant',
      'time',
    ]);
    assert.equal(create?.route, 'POST /v1/sandboxes');
    assert.equal(create?.outcome, 'ok');
    assert.equal(exec?.sandbox, 'aud');
    assert.equal(exec?.route, 'POST /v1/sandboxes/:id/exec');
    assert.equal(denied?.tenant, 'bob');
    assert.equal(denied?.outcome, 'not_found');
    assert.equal(denied?.status, 404);
    assert.equal(unauth?.outcome, 'unauthenticated');
    assert.equal(unauth?.tenant, '?', 'no tenant can be named so');
    assert.equal(typeof exec?.duration_ms, 'number');
  });
});
