/**
 * A hostile page in the sandbox's browser, against a real daemon (`forkbox serve`): a page whose button
 * hangs its main thread holds a click, and `close` ends that browser at once instead of waiting behind
 * the click (which fails); Chromium is gone from the sandbox. (What a browser may send the daemon:
 * browser-relay-flood.test.ts.)
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { abuseDaemon } from '../helpers/abuse.ts';
import { refOf } from '../helpers/browser-page.ts';
import { browserUnavailable, makeBrowserStateDir } from '../helpers/native.ts';

const skip = browserUnavailable();

const HANG = `<!doctype html><title>hang</title><button onclick="for (;;) {}">Hang</button>`;

describe('a hostile page in the browser', { skip: skip ?? false }, () => {
  const d = abuseDaemon(skip ? {} : { stateDir: makeBrowserStateDir() });
  let sb: string;
  before(async () => {
    sb = (await d.api.createSandbox({ name: 'hostile', image: 'debian-browser', memoryMb: 2048 })).id;
    await d.api.writeFile(sb, '/srv/hang.html', Buffer.from(HANG));
  });

  it('a click the page never lets finish: close ends the browser at once, the click fails', async () => {
    const page = await d.api.browser(sb, { action: 'open', url: 'file:///srv/hang.html' });
    const click = d.api.browser(sb, { action: 'click', ref: refOf(page.snapshot ?? '', /button "Hang"/) });
    click.catch(() => undefined);
    await new Promise((r) => setTimeout(r, 1000));
    const started = Date.now();
    assert.equal((await d.api.browser(sb, { action: 'close' })).closed, true);
    assert.ok(Date.now() - started < 10_000, `close took ${Date.now() - started} ms`);
    const r = await click.then(
      () => null,
      (e: Error) => e,
    );
    assert.ok(r instanceof Error, 'the hung click failed');
    assert.ok(Date.now() - started < 20_000, 'and promptly');
    const ps = await d.api.exec(sb, {
      argv: ['sh', '-c', 'ps -eo args | grep -c "^/usr/lib/chromium/chromium" || true'],
    });
    assert.equal(ps.stdout.trim(), '0', 'Chromium is gone from the sandbox');
  });
});
