/**
 * The daemon's browsers (src/browser/browsers.ts) with a scripted sandbox and a stand-in for Playwright
 * (pure bookkeeping; the real thing is test/integration/browser.test.ts): at most BROWSER.perTenant per
 * tenant and BROWSER.perDaemon in all, a close frees a place, relay sockets a dead daemon left are swept,
 * and nothing starts for an action that is not an open.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { createBrowsers } from '../../src/browser/browsers.ts';
import { BROWSER } from '../../src/domain/limits.ts';
import { NETWORK_NONE } from '../../src/domain/network.ts';
import type { BrowserHost } from '../../src/service/ports.ts';
import { rejectsWith } from '../helpers/assert-error.ts';

function fakeBrowser(): Browser {
  const page = {
    setViewportSize: async () => undefined,
    on: () => undefined,
    url: () => 'about:blank',
    title: async () => '',
    ariaSnapshot: async () => '- generic [ref=e1]',
    mainFrame: () => ({}),
    goto: async () => null,
    waitForLoadState: async () => undefined,
  };
  const context = { pages: () => [page] };
  return {
    contexts: () => [context],
    once: () => undefined,
    close: async () => undefined,
  } as unknown as Browser;
}

function host(tenant: string, started: string[]): () => BrowserHost {
  return () => ({
    tenant,
    network: NETWORK_NONE,
    exists: async () => true,
    start: async (argv) => {
      started.push(argv[0] ?? '');
      return `x-${started.length}`;
    },
    ended: async () => null,
    cancel: async () => undefined,
    read: async () => '4000\n/devtools/browser/ab\n',
    dial: async () => new Socket(),
  });
}

describe('browsers: the daemon’s bookkeeping', () => {
  const dir = mkdtempSync(join(tmpdir(), 'forkbox-browsers-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const log = { info() {}, warn() {} };

  it('sweeps the relay sockets a dead daemon left', () => {
    writeFileSync(join(dir, 'stale.sock'), '');
    createBrowsers({ dir, log, connect: async () => fakeBrowser() });
    assert.equal(existsSync(join(dir, 'stale.sock')), false);
  });

  it('counts per tenant and in all; a close frees a place; only open starts one', async () => {
    const started: string[] = [];
    const b = createBrowsers({ dir, log, connect: async () => fakeBrowser() });
    const open = (id: string, tenant: string) =>
      b.act(id, host(tenant, started), { action: 'open', url: 'about:blank' });
    await rejectsWith(
      b.act('x', host('alice', started), { action: 'snapshot' }),
      'not_found',
      /open a page first/,
    );
    assert.equal(started.length, 0, 'no Chromium for a snapshot');
    for (let i = 0; i < BROWSER.perTenant; i++) assert.equal((await open(`a${i}`, 'alice')).started, true);
    await rejectsWith(open('a-extra', 'alice'), 'resource_exhausted', /browsers of yours are open/);
    assert.equal((await open('a0', 'alice')).started, undefined, 'her open browsers still answer');
    for (let i = 0; i < BROWSER.perDaemon - BROWSER.perTenant; i++) await open(`b${i}`, `t${i % 4}`);
    await rejectsWith(open('c', 'carol'), 'resource_exhausted', /in this daemon/);
    assert.equal((await b.act('a3', host('alice', started), { action: 'close' })).closed, true);
    assert.equal((await open('c', 'carol')).started, true, 'the freed place');
    await rejectsWith(open('a-extra', 'alice'), 'resource_exhausted', /in this daemon/);
    await b.closeAll();
    await rejectsWith(open('late', 'dave'), 'unavailable', /stopping/);
  });
});
