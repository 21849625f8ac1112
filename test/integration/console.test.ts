/**
 * The web console in a real browser: a listener over the real engine with a token file of two tenants,
 * headless Chromium (Debian's, through playwright-core) logging in, watching a sandbox made over REST
 * appear without a reload, a fork appear in the tree (snapshots, restores and merges too), a diff of the
 * child's change (unified and side by side), an exec's live output, the terminal, the REPL keeping
 * Python state, the TTL form, the file browser (upload, view, download; a sandbox's HTML never served as
 * a page), the audit page, and the refusals: another tenant's sandbox, a foreign Origin, the cookie used
 * as an API credential. Screenshots of the fork tree, the diff, the terminal and the file browser go to
 * test-output/console/ (or $FORKBOX_TEST_OUTPUT/console/).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Listener } from '../../src/transports/http-listener.ts';
import { launchChromium, testOutputDir } from '../helpers/browser.ts';
import { consoleCookieAt } from '../helpers/console-login.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import { startTenantListener } from '../helpers/tenant-listener.ts';

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
    ({ listener, base } = await startTenantListener(fx, { alice: TOKEN_A, bob: TOKEN_B }));
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
    await page.click('#view-split');
    await page.waitForSelector('table.split');
    const pair = await page.$$eval('table.split tr', (trs) =>
      trs.map((tr) => tr.textContent ?? '').filter((t) => t.includes('two') || t.includes('TWO')),
    );
    assert.deepEqual(pair, ['2two2TWO'], 'the changed line, each side numbered');
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

  it('the tree shows a sandbox’s snapshots; Restore makes a sandbox from one, listed under it', async () => {
    await page.goto(`${base}/console`);
    const node = `#tree li[data-id="${parent}"] > ul > li.snap`;
    await page.waitForSelector(`${node}:has-text("console-snap")`);
    await page.click(`${node}:has-text("console-snap") button`);
    await page.waitForSelector('.notice');
    assert.match((await page.textContent('.notice')) ?? '', /Restored from snapshot console-snap\./);
    const restored = /\/console\/sandboxes\/([^/?]+)/.exec(page.url())?.[1] ?? '';
    assert.notEqual(restored, parent);
    const note = await rest('POST', `/v1/sandboxes/${restored}/exec`, TOKEN_A, { cmd: 'cat /work/note.txt' });
    assert.equal(note.stdout, 'one\ntwo\n');
    await page.goto(`${base}/console`);
    await page.waitForSelector(`${node} a[href$="/${restored}"]`);
  });

  it('a child merged back into its parent shows in the tree under it', async () => {
    const fork = await rest('POST', `/v1/sandboxes/${parent}/fork`, TOKEN_A, { n: 1 });
    const winner = (fork.children as { sandbox: { id: string } }[])[0]?.sandbox.id ?? '';
    await sh(winner, 'echo merged > /work/merged.txt');
    await rest('POST', `/v1/sandboxes/${parent}/merge`, TOKEN_A, { winner });
    await page.goto(`${base}/console`);
    await page.waitForSelector(`#tree li[data-id="${parent}"] > ul > li.merge[data-merged="${winner}"]`, {
      timeout: 10_000,
    });
    assert.match(JSON.stringify(await sh(parent, 'cat /work/merged.txt')), /merged/);
  });

  it('the REPL runs Python in the live interpreter, output escaped; the TTL form sets when it ends', async () => {
    await page.goto(`${base}/console/sandboxes/${parent}`);
    const run = async (code: string) => {
      await page.fill('form[action$="/repl"] textarea', code);
      await page.click('form[action$="/repl"] button');
      await page.waitForSelector('#repl-result');
    };
    await run('x = 6 * 7\nprint("side <b>effect</b>")');
    assert.equal((await page.textContent('#repl-result pre.stdout'))?.trim(), 'side <b>effect</b>');
    assert.equal(await page.$$eval('#repl-result b', (bs) => bs.length), 0, 'output is text, not markup');
    await run('x + 1');
    assert.equal((await page.textContent('#repl-value'))?.trim(), '43');
    await run('1 / 0');
    assert.match((await page.textContent('#repl-error')) ?? '', /ZeroDivisionError/);
    await page.fill('form[action$="/ttl"] input[name=minutes]', '90');
    await page.click('form[action$="/ttl"] button');
    await page.waitForSelector('.notice');
    assert.match((await page.textContent('.notice')) ?? '', /ends in 90 minutes/);
    const left =
      Date.parse(String((await rest('GET', `/v1/sandboxes/${parent}`, TOKEN_A)).expiresAt)) - Date.now();
    assert.ok(left > 88 * 60_000 && left <= 90 * 60_000, `${left} ms left`);
  });

  it('an exec’s page shows its output live, stderr marked, and how it ended', async () => {
    const cmd = 'for i in 1 2 3; do echo "line-$i <b>"; sleep 0.4; done; echo oops >&2; exit 3';
    const ex = await rest('POST', `/v1/sandboxes/${parent}/execs`, TOKEN_A, { cmd });
    await page.goto(`${base}/console/sandboxes/${parent}`);
    await page.click(`a[href$="/execs/${ex.id}"]`);
    await page.waitForSelector('#exec-output span');
    await page.waitForSelector('#exec-state:has-text("exit 3")', { timeout: 15_000 });
    const text = (await page.textContent('#exec-output')) ?? '';
    assert.match(text, /line-1 <b>\nline-2 <b>\nline-3 <b>\n/);
    assert.equal(await page.$$eval('#exec-output b', (bs) => bs.length), 0, 'output is text, not markup');
    assert.equal((await page.textContent('#exec-output span.stderr'))?.trim(), 'oops');
  });

  it('the file browser lists, shows, uploads and downloads; a sandbox’s HTML is never served as a page', async () => {
    await sh(parent, `printf '<script>document.title="pwned"</script>' > /work/page.html`);
    await page.goto(`${base}/console/sandboxes/${parent}`);
    await page.click('#files-link');
    await page.click('#files a:text-is("work/")');
    await page.waitForSelector('#files a:text-is("note.txt")');
    await page.setInputFiles('form[action$="/upload"] input[type=file]', {
      name: 'hello.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from('uploaded from the console\n'),
    });
    await page.click('form[action$="/upload"] button');
    await page.waitForSelector('.notice');
    assert.match((await page.textContent('.notice')) ?? '', /Uploaded hello\.txt/);
    assert.match(JSON.stringify(await sh(parent, 'cat /work/hello.txt')), /uploaded from the console/);
    await page.screenshot({ path: join(out, 'files.png'), fullPage: true });
    await page.click('#files a:text-is("hello.txt")');
    assert.equal(await page.textContent('#content'), 'uploaded from the console\n');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
    assert.equal(download.suggestedFilename(), 'hello.txt');
    assert.equal(readFileSync(await download.path(), 'utf8'), 'uploaded from the console\n');
    // The sandbox's HTML: shown as text on its view page, downloaded as bytes, never run on our origin.
    await page.goto(`${base}/console/sandboxes/${parent}/file?path=/work/page.html`);
    assert.match((await page.textContent('#content')) ?? '', /<script>/);
    assert.notEqual(await page.title(), 'pwned');
    const cookie = await consoleCookieAt(base, TOKEN_A);
    const raw = await fetch(`${base}/console/sandboxes/${parent}/download?path=/work/page.html`, {
      headers: { cookie },
    });
    assert.equal(raw.headers.get('content-type'), 'application/octet-stream');
    assert.match(raw.headers.get('content-disposition') ?? '', /^attachment; filename="page\.html"$/);
    assert.equal(raw.headers.get('x-content-type-options'), 'nosniff');
  });

  it('the terminal runs a shell in the sandbox: typed keys reach it, output shows, a resize reaches stty', async () => {
    await page.goto(`${base}/console/sandboxes/${parent}`);
    await page.click('#terminal-link');
    await page.waitForSelector('#term-state:text-is("connected")', { timeout: 15_000 });
    const screen = () =>
      page.$$eval('#terminal .xterm-rows > div', (rows) => rows.map((r) => r.textContent ?? '').join('\n'));
    const typed = async (line: string, re: RegExp) => {
      await page.click('#terminal');
      await page.keyboard.type(line);
      await page.keyboard.press('Enter');
      // The terminal's rows are divs, one line each (a function: the page's CSP refuses eval'd strings).
      await page.waitForFunction(
        (src) => {
          type Rows = { querySelectorAll(s: string): ArrayLike<{ textContent: string | null }> };
          const doc = (globalThis as unknown as { document: Rows }).document;
          const rows = Array.from(
            doc.querySelectorAll('#terminal .xterm-rows > div'),
            (r) => r.textContent ?? '',
          );
          return new RegExp(src, 'm').test(rows.join('\n'));
        },
        re.source,
        { timeout: 15_000 },
      );
      return screen();
    };
    await typed('echo "term""inal-ok $((6*7))"; cat /work/note.txt', /terminal-ok 42/);
    await page.screenshot({ path: join(out, 'terminal.png'), fullPage: true });
    const size = async () => {
      const m = [...(await typed('clear; stty size', /^\d+ \d+/m)).matchAll(/(\d+) (\d+)/g)].at(-1);
      return m ? `${m[1]} ${m[2]}` : '';
    };
    const before = await size();
    await page.setViewportSize({ width: 700, height: 900 });
    await page.waitForTimeout(500); // the page's resize is debounced
    let after = before;
    for (let i = 0; i < 5 && after === before; i++) after = await size();
    assert.notEqual(after, before, `stty size stayed ${before}`);
    await page.setViewportSize({ width: 1280, height: 720 });
  });

  let bobBox = '';
  it('another tenant’s sandbox is not found and never shown', async () => {
    const bob = (await rest('POST', '/v1/sandboxes', TOKEN_B, { name: 'bob-secret-box' })).id as string;
    bobBox = bob;
    const r = await page.goto(`${base}/console/sandboxes/${bob}`);
    assert.equal(r?.status(), 404);
    assert.doesNotMatch((await page.content()) ?? '', /bob-secret-box/);
    const d = await page.goto(`${base}/console/sandboxes/${child}/diff?against=${bob}`);
    assert.equal(d?.status(), 404);
    await page.goto(`${base}/console`);
    assert.doesNotMatch(await page.content(), /bob-secret-box/);
  });

  it('refuses a foreign Origin, a POST without Origin, and the cookie as an API credential', async () => {
    const cookie = await consoleCookieAt(base, TOKEN_A);
    const kill = (headers: Record<string, string>) =>
      fetch(`${base}/console/sandboxes/${parent}/kill`, { method: 'POST', headers: { cookie, ...headers } });
    assert.equal((await kill({ origin: 'http://evil.example' })).status, 403);
    assert.equal((await kill({})).status, 403);
    assert.equal((await fetch(`${base}/v1/sandboxes`, { headers: { cookie } })).status, 401);
    const sessionId = cookie.split('=')[1];
    const asBearer = await fetch(`${base}/v1/sandboxes`, {
      headers: { authorization: `Bearer ${sessionId}` },
    });
    assert.equal(asBearer.status, 401, 'the session id is no API token');
    const s = await rest('GET', `/v1/sandboxes/${parent}`, TOKEN_A);
    assert.equal(s.state, 'running');
    const res = await fetch(`${base}/console`, { headers: { cookie } });
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'self'/);
  });

  it('the audit page lists the tenant’s own calls, newest first, filtered by sandbox and outcome', async () => {
    await page.goto(`${base}/console/audit`);
    const rows = async () =>
      page.$$eval('#audit tbody tr', (trs) =>
        trs.map((tr) =>
          Array.from(
            tr.querySelectorAll('td'),
            (td) => (td as { textContent: string | null }).textContent ?? '',
          ).join(' | '),
        ),
      );
    const all = await rows();
    assert.ok(
      all.some((r) => r.includes('POST /v1/sandboxes/:id/fork')),
      all.slice(0, 5).join('\n'),
    );
    assert.ok(!all.some((r) => r.includes(bobBox)), 'bob’s calls are not alice’s to see');
    await page.fill('input[name=sandbox]', parent);
    await page.selectOption('select[name=outcome]', 'ok');
    await page.click('#audit ~ form button, form[action="/console/audit"] button');
    await page.waitForURL(/sandbox=/);
    const mine = await rows();
    assert.ok(mine.length > 0);
    assert.ok(
      mine.every((r) => r.includes(parent) && /\bok\b/.test(r)),
      mine.join('\n'),
    );
    const bad = await page.goto(`${base}/console/audit?door=carrier-pigeon`);
    assert.equal(bad?.status(), 400);
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
