import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Hono } from 'hono';
import { createConcurrencyLimiter, onResponseDone } from '../../src/protocol/http/limits.ts';
import { serveHttp } from '../../src/transports/http-server.ts';
import { waitFor } from '../helpers/wait-for.ts';

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

  it('on close, stops accepting, lets in-flight requests finish (drain), then closes', {
    timeout: 60_000,
  }, async () => {
    const limiter = createConcurrencyLimiter(8);
    const app = new Hono();
    app.use('*', async (c, next) => {
      const release = limiter.acquire('t');
      await next();
      c.res = onResponseDone(c.res, release);
    });
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let entered = 0;
    app.get('/slow', async (c) => {
      entered++;
      await gate;
      return c.text('done');
    });
    const s = await serveHttp(app, '127.0.0.1', 0);
    const inflight = fetch(`${s.url}/slow`).then((r) => r.text());
    await waitFor(() => entered === 1, { what: 'the slow request is in its handler' });
    assert.equal(limiter.total(), 1);
    // A grace far longer than the test's own timeout: closing must end on the drain, not on the grace.
    const closing = s.close({ graceMs: 10 * 60_000, drain: (ms) => limiter.drained(ms) });
    await waitFor(
      () =>
        fetch(`${s.url}/slow`).then(
          () => false,
          () => true,
        ),
      { what: 'new connections are refused once closing' },
    );
    release();
    assert.equal(await inflight, 'done');
    await closing;
    assert.equal(limiter.total(), 0);
  });

  it('drops requests still running when the grace ends', async () => {
    let entered = 0;
    const app = new Hono().get('/hang', () => {
      entered++;
      return new Promise<Response>(() => undefined);
    });
    const s = await serveHttp(app, '127.0.0.1', 0);
    const hung = fetch(`${s.url}/hang`).then(
      () => 'answered',
      () => 'dropped',
    );
    await waitFor(() => entered === 1, { what: 'the hanging request is in its handler' });
    await s.close({ graceMs: 200, drain: (ms) => new Promise((r) => setTimeout(r, ms)) });
    assert.equal(await hung, 'dropped');
  });
});
