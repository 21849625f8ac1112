/**
 * The browser under the `allow` network policy (as network-allow.test.ts for commands): Chromium in the
 * sandbox goes through the sandbox's egress proxy, so a page on a listed name loads and one on any other
 * name, or on a listed host's bare address, does not — the proxy refuses it (403) and the page's text
 * never reaches the browser. The test hosts live in a network namespace the test makes (test-hosts.ts).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { ForkboxApi } from '../../src/service/api.ts';
import { egressSuite } from '../helpers/egress-suite.ts';
import { browserUnavailable, makeBrowserStateDir } from '../helpers/native.ts';
import { PORT, SERVER_A, SERVER_B } from '../helpers/test-hosts.ts';

const skip = browserUnavailable();
const BODY = 'a page for the browser';

describe('the browser under network allow', { skip: skip ?? false }, () => {
  const egress = egressSuite({
    hostsMap: `files.test=${SERVER_A};other.test=${SERVER_B}`,
    hello: BODY,
    native: skip ? {} : { stateDir: makeBrowserStateDir() },
  });
  let api: ForkboxApi;
  let sb: string;
  before(async () => {
    api = egress.api;
    sb = (await api.createSandbox({ name: 'web', image: 'debian-browser', network: 'allow:files.test' })).id;
  });

  it('loads a page on a listed name through the proxy', async () => {
    const r = await api.browser(sb, { action: 'open', url: `http://files.test:${PORT}/hello.txt` });
    assert.match(r.snapshot ?? '', new RegExp(BODY));
  });

  it('gets nothing from a name off the list, nor from a listed host by its address', async () => {
    for (const url of [`http://other.test:${PORT}/hello.txt`, `http://${SERVER_A}:${PORT}/hello.txt`]) {
      const r = await api.browser(sb, { action: 'open', url }).catch((e: Error) => e);
      const text = r instanceof Error ? r.message : (r.snapshot ?? '');
      assert.doesNotMatch(text, new RegExp(BODY), url);
      const ev = await api.browser(sb, { action: 'events', limit: 1000 });
      const last = (ev.events ?? [])
        .filter((e) => e.url === url && (e.type === 'response' || e.type === 'requestfailed'))
        .at(-1);
      assert.ok(
        last && ((last.type === 'response' && last.status === 403) || last.type === 'requestfailed'),
        `${url}: ${JSON.stringify(ev.events?.slice(-4))}`,
      );
    }
  });
});
