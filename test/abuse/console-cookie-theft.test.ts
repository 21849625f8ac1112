/**
 * Attack: a page a sandbox serves on its published port steals the console's session. The console's
 * cookie was the bearer token itself, host-only on 127.0.0.1, and published ports were on 127.0.0.1 too;
 * browsers do not isolate cookies by port, so a page the sandbox served referenced `/console/x.png` on
 * its own origin and Chromium sent it `forkbox_console=<token>` — the tenant's API token.
 * Precedent: issue #22 item 1; RFC 6265 §8.5 ("cookies do not provide isolation by port"); session
 * fixation through a same-origin proxied page (OWASP session management).
 * Contained when: in Chromium logged in to the console, the sandbox's published page (and the same
 * sandbox through the listener's port proxy) sees no cookie that authenticates anything — not as a
 * bearer token, not as a console session — and the cookie a login sets is an opaque session id that
 * logout revokes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext } from 'playwright-core';
import type { Listener } from '../../src/transports/http-listener.ts';
import { token } from '../helpers/attacks.ts';
import { launchChromium } from '../helpers/browser.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import { startTenantListener } from '../helpers/tenant-listener.ts';
import { type TenantRest, tenantRest } from '../helpers/tenant-rest.ts';
import { waitFor } from '../helpers/wait-for.ts';

const skip = nativeUnavailable();
const TOKEN = `tok-alice-${token('cookie')}`;

/** A server that records every request's path and Cookie header, serves a page that asks for /console/x.png. */
const RECORDER = `
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open('/tmp/seen.txt', 'a') as f:
            f.write(self.path + '\\t' + (self.headers.get('Cookie') or '') + '\\n')
        if self.path == '/':
            body = b'<html><body><img src="/console/x.png"><img src="/console/login?x=1"></body></html>'
            kind = 'text/html'
        else:
            body = b'x'
            kind = 'image/png'
        self.send_response(200)
        self.send_header('Content-Type', kind)
        self.send_header('Set-Cookie', 'forkbox_console=fixated; Path=/console')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(('127.0.0.1', 8000), H).serve_forever()
`;

describe('abuse: a published page steals the console session', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let listener: Listener;
  let base: string;
  let browser: Browser;
  let ctx: BrowserContext;
  let alice: TenantRest;
  let sb = '';
  let address = '';

  /** Every Cookie header value the sandbox's server has seen. */
  async function cookiesSeen(): Promise<{ path: string; cookie: string }[]> {
    const r = await alice.exec(sb, { argv: ['cat', '/tmp/seen.txt'] });
    return r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [path = '', cookie = ''] = l.split('\t');
        return { path, cookie };
      });
  }
  /** Whether `value` authenticates anything: as a bearer token, or as the console's session cookie. */
  async function authenticates(value: string): Promise<string | null> {
    const api = await fetch(`${base}/v1/sandboxes`, { headers: { authorization: `Bearer ${value}` } });
    if (api.status === 200) return 'the REST API as a bearer token';
    const page = await fetch(`${base}/console`, {
      headers: { cookie: `forkbox_console=${encodeURIComponent(value)}` },
      redirect: 'manual',
    });
    if (page.status === 200) return 'the console as its session cookie';
    return null;
  }

  before(async () => {
    fx = await openNative();
    ({ listener, base } = await startTenantListener(fx, { alice: TOKEN }));
    alice = tenantRest(base, TOKEN, 'alice');
    sb = await alice.create();
    const put = await fetch(`${base}/v1/sandboxes/${sb}/files/content?path=/tmp/rec.py`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: RECORDER,
    });
    assert.equal(put.status, 200, await put.text());
    await alice.exec(sb, { cmd: 'nohup python3 /tmp/rec.py >/dev/null 2>&1 &' });
    const p = await alice.call('POST', `/v1/sandboxes/${sb}/ports`, { port: 8000 });
    assert.equal(p.status, 200, JSON.stringify(p.json));
    address = p.json.address as string;
    browser = await launchChromium();
    ctx = await browser.newContext();
  });
  after(async () => {
    await browser?.close().catch(() => undefined);
    await listener?.close(2000);
    const api = fx?.opened.engine.scoped({ tenant: 'alice' });
    for (const s of (await api?.listSandboxes()) ?? []) await api?.killSandbox(s.id).catch(() => undefined);
    await fx?.close();
  });

  it('the published page of a logged-in browser sees no cookie that authenticates', async () => {
    const page = await ctx.newPage();
    await page.goto(`${base}/console/login`);
    await page.fill('input[name=token]', TOKEN);
    await page.click('button[type=submit]');
    await page.waitForSelector('#sandboxes');
    const [session] = (await ctx.cookies()).filter((c) => c.name === 'forkbox_console');
    assert.ok(session, 'logged in');
    assert.notEqual(session.value, TOKEN, 'the cookie is not the token');
    assert.equal(await authenticates(session.value), 'the console as its session cookie');

    await waitFor(
      async () => {
        const r = await page.goto(`http://${address}/`).catch(() => null);
        return r?.status() === 200 ? true : undefined;
      },
      { timeoutMs: 20_000, what: `the sandbox's page at ${address}` },
    );
    await waitFor(
      async () => ((await cookiesSeen()).some((s) => s.path === '/console/x.png') ? true : undefined),
      {
        timeoutMs: 10_000,
        what: 'the page asked the sandbox for /console/x.png',
      },
    );
    const seen = await cookiesSeen();
    process.stderr.write(`# the sandbox saw: ${JSON.stringify(seen)}\n`);
    for (const { path, cookie } of seen) {
      for (const part of cookie.split(';')) {
        const value = decodeURIComponent(part.slice(part.indexOf('=') + 1).trim());
        if (value === '') continue;
        const opens = await authenticates(value);
        assert.equal(opens, null, `the sandbox's ${path} was sent a cookie that opens ${opens}`);
      }
    }
    // Its Set-Cookie on its own site does not reach the console's.
    const after = (await ctx.cookies(`${base}/console`)).filter((c) => c.name === 'forkbox_console');
    assert.deepEqual(
      after.map((c) => c.value),
      [session.value],
    );
    await page.close();
  });

  it('through the port proxy the sandbox gets no cookie and sets none on the listener', async () => {
    const page = await ctx.newPage();
    await page.goto(`${base}/console`);
    await page.waitForSelector('#sandboxes');
    const [session] = (await ctx.cookies(`${base}/console`)).filter((c) => c.name === 'forkbox_console');
    assert.ok(session);
    const before = (await cookiesSeen()).length;
    // A client that sends both (a browser with a header extension): the proxy passes neither on.
    const r = await fetch(`${base}/v1/sandboxes/${sb}/ports/8000/console/y.png`, {
      headers: { authorization: `Bearer ${TOKEN}`, cookie: `forkbox_console=${session.value}` },
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('set-cookie'), null, "the sandbox's Set-Cookie is dropped");
    assert.match(r.headers.get('content-security-policy') ?? '', /^sandbox /);
    const seen = (await cookiesSeen()).slice(before);
    assert.deepEqual(
      seen.map((s) => [s.path, s.cookie]),
      [['/console/y.png', '']],
    );
    await page.close();
  });

  it('logout ends the session the cookie named', async () => {
    const page = await ctx.newPage();
    await page.goto(`${base}/console`);
    const [session] = (await ctx.cookies(`${base}/console`)).filter((c) => c.name === 'forkbox_console');
    assert.ok(session);
    await page.click('form[action="/console/logout"] button');
    await page.waitForURL(/\/console\/login$/);
    assert.equal(await authenticates(session.value), null, 'the old session id opens nothing');
    await page.close();
  });
});
