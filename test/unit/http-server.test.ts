import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Hono } from 'hono';
import { createConcurrencyLimiter, onResponseDone } from '../../src/protocol/http/limits.ts';
import { serveHttp } from '../../src/transports/http-server.ts';

describe('http server', () => {
  it('binds 127.0.0.1:0 and reports the real port; a busy port is a clear conflict', async () => {
    const app = new Hono().get('/', (c) => c.text('hi'));
    const s = await serveHttp(app, '127.0.0.1', 0);
    try {
      assert.ok(s.port > 0);
      assert.equal(s.url, `http://127.0.0.1:${s.port}`);
      assert.equal(await (await fetch(s.url)).text(), 'hi');
      await assert.rejects(serveHttp(app, '127.0.0.1', s.port), /already in use.*--listen/);
    } finally {
      await s.close({ graceMs: 1000 });
    }
  });

  it('on close, stops accepting, lets in-flight requests finish (drain), then closes', async () => {
    const limiter = createConcurrencyLimiter(8);
    const app = new Hono();
    app.use('*', async (c, next) => {
      const release = limiter.acquire('t');
      await next();
      c.res = onResponseDone(c.res, release);
    });
    app.get('/slow', async (c) => {
      await new Promise((r) => setTimeout(r, 400));
      return c.text('done');
    });
    const s = await serveHttp(app, '127.0.0.1', 0);
    const inflight = fetch(`${s.url}/slow`).then((r) => r.text());
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(limiter.total(), 1);
    const t0 = Date.now();
    const closing = s.close({ graceMs: 5000, drain: (ms) => limiter.drained(ms) });
    await new Promise((r) => setTimeout(r, 50));
    await assert.rejects(fetch(`${s.url}/slow`), 'new connections are refused');
    assert.equal(await inflight, 'done');
    await closing;
    assert.ok(Date.now() - t0 < 3000, 'closed once drained, not after the whole grace');
    assert.equal(limiter.total(), 0);
  });

  it('drops requests still running when the grace ends', async () => {
    const app = new Hono().get('/hang', () => new Promise<Response>(() => undefined));
    const s = await serveHttp(app, '127.0.0.1', 0);
    const hung = fetch(`${s.url}/hang`).then(
      () => 'answered',
      () => 'dropped',
    );
    await new Promise((r) => setTimeout(r, 100));
    await s.close({ graceMs: 200, drain: (ms) => new Promise((r) => setTimeout(r, ms)) });
    assert.equal(await hung, 'dropped');
  });
});
