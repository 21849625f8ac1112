/**
 * The web console in a real browser: a listener over the real engine with a token file of two tenants,
 * headless Chromium (Debian's, through playwright-core) logging in, watching a sandbox made over REST
 * appear without a reload, a fork appear in the tree, a diff of the child's change, and the refusals:
 * another tenant's sandbox, a foreign Origin, the cookie used as an API credential. Screenshots of the
 * fork tree and the diff go to test-output/console/ (or $FORKBOX_TEST_OUTPUT/console/).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { type Listener, startListener } from '../../src/transports/http-listener.ts';
import { launchChromium, testOutputDir } from '../helpers/browser.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();
const TOKEN_A = 'tok-alice-console-5f1c9e2d7a8b4c3e';
const TOKEN_B = 'tok-bob-console-8e7d6c5b4a392817';

describe('web console in Chromium', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let listener: Listener;
  let base: string;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  const foreign: string[] = [];
  const out = testOutputDir('console');

  const rest = async (method: string, path: string, token: string, body?: unknown) => {
    const r = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await r.text();
    assert.ok(r.ok, `${method} ${path}: ${r.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const sh = (id: string, cmd: string) => rest('POST', `/v1/sandboxes/${id}/exec`, TOKEN_A, { cmd });

  before(async () => {
    fx = await openNative();
    const tokenFile = join(fx.stateDir, 'tokens');
    writeFileSync(tokenFile, `${TOKEN_A} alice\n${TOKEN_B} bob\n`, { mode: 0o600 });
    listener = await startListener({
      engine: fx.opened.engine,
      version: 'test',
      host: '127.0.0.1',
      port: 0,
      tokenFile,
      stateDir: fx.stateDir,
    });
    base = listener.server.url;
    browser = await launchChromium();
    ctx = await browser.newContext();
    page = await ctx.newPage();
    page.on('request', (r) => {
      if (!r.url().startsWith(`${base}/`)) foreign.push(r.url());
    });
  });
  after(async () => {
    await browser?.close().catch(() => undefined);
    await listener?.close(2000);
    for (const tenant of ['alice', 'bob']) {
      const api = fx?.opened.engine.scoped({ tenant });
      for (const s of (await api?.listSandboxes()) ?? []) await api?.killSandbox(s.id).catch(() => undefined);
    }
    await fx?.close();
  });

  it('logs in with a token: HttpOnly, SameSite=Strict cookie for /console; a wrong token is refused', async () => {
    await page.goto(`${base}/console`);
    assert.match(page.url(), /\/console\/login$/);
    await page.fill('input[name=token]', 'not-a-token-of-this-daemon');
    await page.click('button[type=submit]');
    await page.waitForSelector('#login-error');
    await page.fill('input[name=token]', TOKEN_A);
    await page.click('button[type=submit]');
    await page.waitForSelector('#sandboxes');
    assert.match(page.url(), /\/console$/);
    const cookies = await ctx.cookies();
    assert.equal(cookies.length, 1);
    assert.deepEqual(
      [cookies[0]?.httpOnly, cookies[0]?.sameSite, cookies[0]?.path],
      [true, 'Strict', '/console'],
    );
    await page.waitForSelector('#live.on');
  });

  let parent = '';
  let child = '';
  it('a sandbox made over REST appears without a reload; a fork appears in the tree', async () => {
    let navigations = 0;
    page.on('framenavigated', () => navigations++);
    parent = (await rest('POST', '/v1/sandboxes', TOKEN_A, { name: 'console-parent' })).id as string;
    await page.waitForSelector(`#sandboxes tr[data-id="${parent}"]`, { timeout: 10_000 });
    await sh(parent, "mkdir -p /work && printf 'one\\ntwo\\n' > /work/note.txt");
    const fork = await rest('POST', `/v1/sandboxes/${parent}/fork`, TOKEN_A, { n: 1 });
    child = ((fork.children as { sandbox: { id: string } }[])[0] as { sandbox: { id: string } }).sandbox.id;
    await page.waitForSelector(`#tree li[data-id="${parent}"] > ul > li[data-id="${child}"]`, {
      timeout: 10_000,
    });
    assert.equal(navigations, 0, 'the page was reloaded');
    await page.screenshot({ path: join(out, 'fork-tree.png'), fullPage: true });
  });

  it('the diff page shows the child’s change as a unified diff and names a binary file', async () => {
    await sh(child, "printf 'one\\nTWO\\n' > /work/note.txt && printf 'a\\000b' > /work/blob.bin");
    await page.goto(`${base}/console/sandboxes/${child}`);
    const history = (await page.$$eval('main td code', (cs) => cs.map((c) => c.textContent ?? ''))).join(
      '\n',
    );
    assert.match(history, /blob\.bin/, 'the exec history lists the child’s exec');
    await page.click('#diff-parent');
    await page.waitForSelector('pre.diff');
    const text = await page.textContent('main');
    assert.match(text ?? '', /\/work\/note\.txt/);
    assert.ok(await page.isVisible('pre.diff span.del:text-is("-two")'), 'the removed line');
    assert.ok(await page.isVisible('pre.diff span.add:text-is("+TWO")'), 'the added line');
    const binary = await page.$$eval('p.binary', (ps) => ps.map((p) => p.textContent ?? ''));
    assert.ok(
      binary.some((t) => /\/work\/blob\.bin .*binary/.test(t)),
      `binary files: ${binary.join('; ')}`,
    );
    await page.screenshot({ path: join(out, 'diff.png'), fullPage: true });
  });

  it('the sandbox page’s forms fork, snapshot and kill', async () => {
    await page.goto(`${base}/console/sandboxes/${parent}`);
    await page.click('form[action$="/fork"] button');
    await page.waitForSelector('.notice');
    assert.match((await page.textContent('.notice')) ?? '', /Forked 1 of 1/);
    const kids = await page.$$eval('main li a', (as) => as.map((a) => a.textContent));
    assert.equal(kids.length, 2, `children: ${kids.join(', ')}`);
    await page.fill('form[action$="/snapshot"] input[name=name]', 'console-snap');
    await page.click('form[action$="/snapshot"] button');
    await page.waitForSelector('.notice');
    assert.match((await page.textContent('.notice')) ?? '', /Snapshot console-snap/);
    await page.goto(`${base}/console/sandboxes/${child}`);
    await page.click('form[action$="/kill"] button');
    await page.waitForSelector('.notice');
    assert.match((await page.textContent('.notice')) ?? '', /killed/);
    assert.notEqual((await rest('GET', `/v1/sandboxes/${child}`, TOKEN_A)).state, 'running');
  });

  it('another tenant’s sandbox is not found and never shown', async () => {
    const bob = (await rest('POST', '/v1/sandboxes', TOKEN_B, { name: 'bob-secret-box' })).id as string;
    const r = await page.goto(`${base}/console/sandboxes/${bob}`);
    assert.equal(r?.status(), 404);
    assert.doesNotMatch((await page.content()) ?? '', /bob-secret-box/);
    const d = await page.goto(`${base}/console/sandboxes/${child}/diff?against=${bob}`);
    assert.equal(d?.status(), 404);
    await page.goto(`${base}/console`);
    assert.doesNotMatch(await page.content(), /bob-secret-box/);
  });

  it('refuses a foreign Origin, a POST without Origin, and the cookie as an API credential', async () => {
    const cookie = `forkbox_console=${TOKEN_A}`;
    const kill = (headers: Record<string, string>) =>
      fetch(`${base}/console/sandboxes/${parent}/kill`, { method: 'POST', headers: { cookie, ...headers } });
    assert.equal((await kill({ origin: 'http://evil.example' })).status, 403);
    assert.equal((await kill({})).status, 403);
    assert.equal((await fetch(`${base}/v1/sandboxes`, { headers: { cookie } })).status, 401);
    const s = await rest('GET', `/v1/sandboxes/${parent}`, TOKEN_A);
    assert.equal(s.state, 'running');
    const res = await fetch(`${base}/console`, { headers: { cookie } });
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'self'/);
  });

  it('logs out; no request ever left the console’s origin', async () => {
    await page.goto(`${base}/console`);
    await page.click('header form button');
    await page.waitForSelector('input[name=token]');
    assert.equal((await ctx.cookies()).length, 0);
    const again = await page.goto(`${base}/console`);
    assert.match(again?.url() ?? '', /\/console\/login$/);
    assert.deepEqual(foreign, []);
  });
});
