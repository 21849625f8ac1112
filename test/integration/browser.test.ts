/**
 * The browser in a sandbox, for real: Debian's Chromium in a sandbox of the browser image, driven by the
 * daemon through the sandbox's own relay (no host TCP port): a page served inside the sandbox is opened,
 * its snapshot names the form's elements by ref, fill/select/click by ref change what the next snapshot
 * shows, the console message and the failed request are in the events, a screenshot is a PNG of the
 * viewport; back/forward; the bounds and errors; the network policy `none` holds for the browser too;
 * close, and a killed sandbox's browser is gone.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type OpenedEngine, openEngine } from '../../src/composition.ts';
import type { BrowserResult } from '../../src/domain/browser.ts';
import { rejectsWith as assertError } from '../helpers/assert-error.ts';
import { refOf, SITE, serveSite } from '../helpers/browser-page.ts';
import { browserUnavailable, makeBrowserStateDir, quietLog } from '../helpers/native.ts';

const skip = browserUnavailable();

/** Host TCP ports listening (IPv4 and IPv6), from /proc/net. */
function hostListeners(): Set<string> {
  const out = new Set<string>();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(f, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] === '0A') out.add(cols[1] ?? '');
    }
  }
  return out;
}

describe('the browser in a sandbox', { skip: skip ?? false }, () => {
  let stateDir: string;
  let opened: OpenedEngine;
  let sb: string;
  const act = (a: Parameters<OpenedEngine['api']['browser']>[1]) => opened.api.browser(sb, a);

  before(async () => {
    stateDir = makeBrowserStateDir();
    opened = await openEngine({ stateDir, log: quietLog(), reapIntervalMs: 0 });
    sb = (await opened.api.createSandbox({ name: 'web', image: 'debian-browser', memoryMb: 1024 })).id;
    await serveSite(opened.api, sb);
  });
  after(async () => {
    await opened?.close({ killSandboxes: true });
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  let page: BrowserResult;
  it('open: Chromium starts in the sandbox, the page comes back as a snapshot with refs', async () => {
    const listening = hostListeners();
    page = await act({ action: 'open', url: `${SITE}/` });
    assert.equal(page.started, true);
    assert.equal(page.url, `${SITE}/`);
    assert.equal(page.title, 'Test form');
    for (const re of [/textbox "Name"/, /combobox "Plan"/, /button "Send"/, /link "Second page"/])
      refOf(page.snapshot ?? '', re);
    assert.match(page.snapshot ?? '', /Nothing sent/);
    const added = [...hostListeners()].filter((l) => !listening.has(l));
    assert.deepEqual(added, [], 'no host TCP port was opened for the browser');
    const dir = join(stateDir, 'browsers');
    assert.equal(statSync(dir).mode & 0o777, 0o700, 'the relay sockets are the daemon’s alone');
    assert.equal(readdirSync(dir).length, 1, 'one relay socket');
    const ps = await opened.api.exec(sb, {
      argv: ['sh', '-c', 'ps -eo args | grep -c "^/usr/lib/chromium/chromium"'],
    });
    assert.ok(Number(ps.stdout.trim()) >= 1, 'Chromium runs inside the sandbox');
  });

  it('fill, select and click by ref: the next snapshot shows the change', async () => {
    const s0 = page.snapshot ?? '';
    await act({ action: 'fill', ref: refOf(s0, /textbox "Name"/), value: 'Ada' });
    await act({ action: 'select', ref: refOf(s0, /combobox "Plan"/), values: ['pro'] });
    const after = await act({ action: 'click', ref: refOf(s0, /button "Send"/) });
    assert.match(after.snapshot ?? '', /Hello, Ada \(pro\)/);
    assert.match(after.snapshot ?? '', /button "Sent"/);
    const again = await act({ action: 'snapshot' });
    assert.match(again.snapshot ?? '', /textbox "Name"[^\n]*: Ada/);
  });

  it('events since a cursor: the console message, the 404, the navigation', async () => {
    const all = await act({ action: 'events' });
    const events = all.events ?? [];
    assert.ok(
      events.some((e) => e.type === 'console' && e.text === 'hello from the page'),
      JSON.stringify(events),
    );
    assert.ok(
      events.some((e) => e.type === 'response' && e.status === 404 && /missing\.json$/.test(e.url ?? '')),
    );
    assert.ok(events.some((e) => e.type === 'navigation' && e.url === `${SITE}/`));
    const later = await act({ action: 'events', since: all.next ?? 0 });
    assert.deepEqual(later.events, [], 'nothing new after the cursor');
    const two = await act({ action: 'events', limit: 2 });
    assert.equal(two.events?.length, 2);
  });

  it('screenshot: a PNG of the viewport, within the bound', async () => {
    const r = await act({ action: 'screenshot' });
    const png = Buffer.from(r.screenshot?.base64 ?? '', 'base64');
    assert.equal(png.subarray(1, 4).toString(), 'PNG');
    assert.equal(png.readUInt32BE(16), 1280, 'width');
    assert.equal(png.readUInt32BE(20), 800, 'height');
    assert.ok(png.length < 4 * 1024 * 1024);
    assert.equal(r.screenshot?.bytes, png.length);
  });

  it('a link, then back and forward; press and scroll', async () => {
    const s = (await act({ action: 'snapshot' })).snapshot ?? '';
    const second = await act({ action: 'click', ref: refOf(s, /link "Second page"/) });
    assert.equal(second.url, `${SITE}/second.html`);
    assert.match(second.snapshot ?? '', /heading "The second page"/);
    assert.equal((await act({ action: 'navigate', to: 'back' })).url, `${SITE}/`);
    assert.equal((await act({ action: 'navigate', to: 'forward' })).url, `${SITE}/second.html`);
    const home = await act({ action: 'open', url: `${SITE}/` });
    assert.equal(home.started, undefined, 'the same browser');
    await act({ action: 'press', ref: refOf(home.snapshot ?? '', /textbox "Name"/), key: 'x' });
    assert.match((await act({ action: 'snapshot' })).snapshot ?? '', /textbox "Name"[^\n]*: x/);
    await act({ action: 'scroll', dy: 200 });
    await act({ action: 'wait_for', text: 'Nothing sent' });
  });

  it('refuses what it must: bad refs, schemes, sizes; a stale ref times out with advice', async () => {
    await assertError(act({ action: 'click', ref: 'body' }), 'invalid_argument', /not an element ref/);
    await assertError(
      act({ action: 'open', url: 'javascript:alert(1)' }),
      'invalid_argument',
      /http, https and file/,
    );
    await assertError(act({ action: 'open', url: 'chrome://settings' }), 'invalid_argument');
    await assertError(act({ action: 'fill', ref: 'e1', value: 'x'.repeat(70 * 1024) }), 'too_large');
    await assertError(
      act({ action: 'wait_for', ref: 'e9999', timeoutMs: 500 }),
      'timeout',
      /Take a new snapshot/,
    );
  });

  it('network policy none: the browser reaches nothing off the sandbox', async () => {
    await assertError(act({ action: 'open', url: 'http://192.0.2.1/' }), 'unavailable', /network policy/);
    const e = await act({ action: 'events' });
    assert.ok((e.events ?? []).some((x) => x.type === 'requestfailed' && /192\.0\.2\.1/.test(x.url ?? '')));
  });

  it('a fork with the page open: each child replays it, fills the form its own way; the parent’s is unchanged', async () => {
    // A file:// page: files are carried by a fork; the http.server serving SITE is a process, and is not.
    const base = await act({ action: 'open', url: 'file:///srv/index.html' });
    await act({ action: 'fill', ref: refOf(base.snapshot ?? '', /textbox "Name"/), value: 'Base' });
    const started = Date.now();
    const fork = await opened.api.forkSandbox(sb, { n: 3 });
    const ms = Date.now() - started;
    assert.equal(fork.browser?.carried, 'replayed');
    assert.equal(fork.browser?.url, 'file:///srv/index.html');
    assert.equal(fork.browser?.actions, 1);
    assert.deepEqual(
      fork.browser?.children.map((c) => c.ok),
      [true, true, true],
      JSON.stringify(fork.browser),
    );
    const kids = fork.children.map((c) => c.sandbox?.id ?? '');
    await Promise.all(
      kids.map(async (kid, i) => {
        const s = (await opened.api.browser(kid, { action: 'snapshot' })).snapshot ?? '';
        assert.match(s, /textbox "Name"[^\n]*: Base/, `child ${i} has the parent's form state`);
        await opened.api.browser(kid, {
          action: 'fill',
          ref: refOf(s, /textbox "Name"/),
          value: `child-${i}`,
        });
        const done = await opened.api.browser(kid, { action: 'click', ref: refOf(s, /button "Send"/) });
        assert.match(done.snapshot ?? '', new RegExp(`Hello, child-${i} \\(free\\)`));
      }),
    );
    const parent = (await act({ action: 'snapshot' })).snapshot ?? '';
    assert.match(parent, /textbox "Name"[^\n]*: Base/);
    assert.match(parent, /Nothing sent/, 'the parent’s page is unchanged');
    for (const kid of kids) await opened.api.killSandbox(kid);
    process.stderr.write(`# fork of a sandbox with an open browser into 3, replayed: ${ms} ms\n`);
  });

  it('close stops Chromium; a sandbox killed with its browser open leaves nothing behind', async () => {
    assert.equal((await act({ action: 'close' })).closed, true);
    assert.equal((await act({ action: 'close' })).closed, false, 'closing twice is fine');
    await assertError(act({ action: 'snapshot' }), 'not_found', /open a page first/);
    await act({ action: 'open', url: `${SITE}/` });
    await opened.api.killSandbox(sb);
    await assertError(act({ action: 'snapshot' }), 'conflict');
    assert.deepEqual(readdirSync(join(stateDir, 'browsers')), [], 'its relay socket is gone');
  });
});
