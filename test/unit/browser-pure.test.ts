/**
 * The browser's pure parts: refs, selectors and URLs an agent may give; Chromium's argv and its
 * DevToolsActivePort file; the event log's cursor and bounds; what launching does when Chromium is
 * missing, exits, or starts (against a scripted sandbox).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  chromiumArgv,
  type LaunchHost,
  launchChromium,
  parseActivePort,
} from '../../src/browser/chromium-launch.ts';
import { createEventLog, cut } from '../../src/browser/event-log.ts';
import { createReplayLog, lineOfRef, refOnLine } from '../../src/browser/replay-log.ts';
import { checkBrowserUrl, checkRef, selectorOf } from '../../src/domain/browser.ts';
import { NETWORK_NONE } from '../../src/domain/network.ts';
import { rejectsWith } from '../helpers/assert-error.ts';

describe('browser: what an agent may name', () => {
  it('refs from snapshots only', () => {
    for (const r of ['e1', 'e12345', 'f1e3']) assert.equal(checkRef(r), r);
    for (const r of ['', 'E1', 'e', 'e1 ', 'body', 'e1,e2', 'css=e1', 'f1', 'e12345678'])
      assert.throws(() => checkRef(r), /not an element ref/);
  });

  it('a target is a ref or a CSS selector, one of them', () => {
    assert.equal(selectorOf({ ref: 'e4' }), 'aria-ref=e4');
    assert.equal(selectorOf({ selector: '#go' }), 'css=#go');
    assert.throws(() => selectorOf({}), /one of them/);
    assert.throws(() => selectorOf({ ref: 'e1', selector: '#x' }), /one of them/);
    assert.throws(() => selectorOf({ selector: 'x'.repeat(1025) }), /1 to 1024/);
  });

  it('URLs: http(s), file and about:blank; nothing else', () => {
    assert.equal(checkBrowserUrl('http://localhost:8000'), 'http://localhost:8000/');
    assert.equal(checkBrowserUrl('file:///srv/index.html'), 'file:///srv/index.html');
    assert.equal(checkBrowserUrl('about:blank'), 'about:blank');
    for (const u of [
      'javascript:alert(1)',
      'chrome://settings',
      'data:text/html,x',
      'view-source:http://a/',
      'ftp://a/',
    ])
      assert.throws(() => checkBrowserUrl(u), /http, https and file/);
    assert.throws(() => checkBrowserUrl('localhost:8000'), /http, https and file|not a URL/);
    assert.throws(() => checkBrowserUrl('no url'), /not a URL/);
    assert.throws(() => checkBrowserUrl(`http://a/${'x'.repeat(9000)}`), /over 8192 bytes/);
  });
});

describe('browser: Chromium in the sandbox', () => {
  it('argv: headless, its own profile, DevTools on loopback port 0; the proxy only under allow', () => {
    const none = chromiumArgv('/tmp/p', NETWORK_NONE);
    assert.equal(none[0], '/usr/lib/chromium/chromium');
    for (const f of [
      '--headless',
      '--user-data-dir=/tmp/p',
      '--remote-debugging-address=127.0.0.1',
      '--remote-debugging-port=0',
    ])
      assert.ok(none.includes(f), f);
    assert.ok(!none.some((a) => a.startsWith('--proxy-server')));
    const allow = chromiumArgv('/tmp/p', { mode: 'allow', hosts: ['example.com'] } as never);
    assert.ok(allow.includes('--proxy-server=http://127.0.0.1:3128'));
  });

  it('DevToolsActivePort: a port and a browser path, or nothing', () => {
    assert.deepEqual(parseActivePort('39017\n/devtools/browser/0a1b-2c\n'), {
      port: 39017,
      path: '/devtools/browser/0a1b-2c',
    });
    for (const t of [
      '',
      '39017',
      '0\n/devtools/browser/x',
      '70000\n/devtools/browser/x',
      '1\n/other',
      '1\n/devtools/browser/../x',
    ])
      assert.equal(parseActivePort(t), null, JSON.stringify(t));
  });

  function host(over: Partial<LaunchHost>): LaunchHost & { cancelled: string[] } {
    const cancelled: string[] = [];
    return {
      tenant: 'alice',
      network: NETWORK_NONE,
      exists: async () => true,
      start: async () => 'x-1',
      ended: async () => null,
      cancel: async (id) => {
        cancelled.push(id);
      },
      read: async () => null,
      cancelled,
      ...over,
    };
  }

  it('launch: no Chromium in the image is a clear requirement; an early exit says why and is cleaned', async () => {
    await rejectsWith(
      launchChromium(host({ exists: async () => false })),
      'requirement_missing',
      /debian-browser/,
    );
    const h = host({ ended: async () => 'exited with status 1: cannot open display' });
    await rejectsWith(launchChromium(h), 'unavailable', /cannot open display/);
    assert.deepEqual(h.cancelled, ['x-1']);
  });

  it('launch: the port and path once Chromium wrote them', async () => {
    let reads = 0;
    const h = host({
      read: async (p) =>
        ++reads < 3 ? null : p.endsWith('/DevToolsActivePort') ? '4000\n/devtools/browser/ab\n' : null,
    });
    const l = await launchChromium(h);
    assert.equal(l.port, 4000);
    assert.equal(l.path, '/devtools/browser/ab');
    assert.match(l.profile, /^\/tmp\/\.forkbox-browser\/[0-9a-f]{12}$/);
    assert.deepEqual(h.cancelled, []);
  });
});

describe('browser: the event log', () => {
  it('keeps the newest, cursors keep counting, drops are told', () => {
    let t = 0;
    const log = createEventLog(() => ++t, 3);
    for (let i = 1; i <= 5; i++) log.add({ type: 'console', text: `m${i}` });
    const all = log.since(0);
    assert.deepEqual(
      all.events.map((e) => e.text),
      ['m3', 'm4', 'm5'],
    );
    assert.equal(all.dropped, 2);
    assert.equal(all.next, 5);
    assert.deepEqual(
      log.since(4).events.map((e) => e.text),
      ['m5'],
    );
    assert.equal(log.since(4).dropped, 0);
    assert.deepEqual(log.since(5), { events: [], next: 5, dropped: 0 });
    assert.deepEqual(
      log.since(0, 1).events.map((e) => e.seq),
      [3],
    );
  });

  it('cuts long texts on a character boundary', () => {
    const log = createEventLog();
    log.add({ type: 'console', text: 'é'.repeat(5000), url: `http://a/${'x'.repeat(5000)}` });
    const [e] = log.since(0).events;
    assert.ok(Buffer.byteLength(e?.text ?? '') <= 2048 + 3);
    assert.ok(!(e?.text ?? '').includes('\uFFFD'));
    assert.ok((e?.url ?? '').endsWith('…'));
    assert.equal(cut('short'), 'short');
  });
});

describe('browser: what a fork replays', () => {
  const snap = '- generic [ref=e1]:\n  - textbox "Name" [ref=f7e4]\n  - button "Send" [ref=f7e5]';

  it('refs by snapshot line, both ways', () => {
    assert.equal(lineOfRef(snap, 'f7e4'), 1);
    assert.equal(lineOfRef(snap, 'e4'), undefined, 'a ref is matched whole');
    assert.equal(refOnLine(snap.replaceAll('f7e', 'e'), 2), 'e5');
    assert.equal(refOnLine(snap, 9), undefined);
  });

  it('the last open and the page-changing actions after it; reads are not kept', () => {
    const log = createReplayLog();
    log.record({ action: 'click', ref: 'e1' }, 0);
    assert.deepEqual(log.steps(), [], 'nothing before an open');
    log.record({ action: 'open', url: 'file:///a' });
    log.record({ action: 'fill', ref: 'e4', value: 'x' }, 1);
    log.record({ action: 'snapshot' });
    log.record({ action: 'screenshot' });
    log.record({ action: 'navigate', to: 'back' });
    assert.deepEqual(log.steps(), [
      { action: { action: 'open', url: 'file:///a' } },
      { action: { action: 'fill', ref: 'e4', value: 'x' }, refLine: 1 },
      { action: { action: 'navigate', to: 'back' } },
    ]);
    log.record({ action: 'click', ref: 'e9' });
    log.record({ action: 'press', key: 'Enter' });
    assert.equal(log.steps().length, 3, 'an action on a ref no snapshot named ends the replayable part');
    log.record({ action: 'open', url: 'file:///b' });
    assert.deepEqual(
      log.steps(),
      [{ action: { action: 'open', url: 'file:///b' } }],
      'a new open starts over',
    );
  });
});
