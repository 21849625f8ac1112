/**
 * The `browser` toolset next to the canonical one, as an MCP user runs it: the v1 TypeScript SDK over
 * stdio against `forkbox mcp --toolset forkbox --toolset browser`, a client of a real daemon. A sandbox of
 * the browser image serves a page; browser_open answers the page (JSON) and its snapshot (its own text
 * block), fill and click by ref change it, browser_screenshot is a PNG image block, browser_events has
 * the console message; browser_close; a sandbox without Chromium gets an error saying which image to use.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { createDaemonClient } from '../../src/transports/daemon-client.ts';
import { refOf, SITE, serveSite } from '../helpers/browser-page.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { forkboxMcpServer } from '../helpers/mcp-stdio.ts';
import { browserUnavailable, makeBrowserStateDir } from '../helpers/native.ts';

const skip = browserUnavailable();

interface Result {
  isError?: boolean;
  content: { type: string; text?: string; data?: string; mimeType?: string }[];
  structuredContent?: Record<string, unknown>;
}

describe('browser toolset over stdio (v1 SDK, real daemon)', { skip: skip ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;
  let client: Client;

  const call = async (name: string, args: Record<string, unknown>) => {
    const r = (await client.callTool({ name, arguments: args }, CallToolResultSchema, {
      timeout: 120_000,
    })) as Result;
    return r;
  };
  const ok = async (name: string, args: Record<string, unknown>) => {
    const r = await call(name, args);
    assert.notEqual(r.isError, true, `${name}: ${r.content[0]?.text}`);
    return r;
  };

  before(async () => {
    stateDir = makeBrowserStateDir();
    daemon = await startServe(stateDir);
    client = new Client({ name: 'browser-user', version: '1' });
    await client.connect(
      new StdioClientTransport(
        forkboxMcpServer(stateDir, { extraArgs: ['--toolset', 'forkbox', '--toolset', 'browser'] }),
      ),
    );
  });
  after(async () => {
    await client?.close().catch(() => undefined);
    await stopServeAndClean(daemon?.child, stateDir);
  });

  it('open → snapshot block → fill and click by ref → screenshot image → events → close', async () => {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.equal(names.length, 38 + 12, 'the canonical tools and the browser tools');
    assert.ok(names.includes('sandbox_create') && names.includes('browser_screenshot'));

    await ok('sandbox_create', { name: 'web', image: 'debian-browser' });
    await serveSite(createDaemonClient({ socketPath: join(stateDir, 'forkbox.sock') }), 'web');
    const opened = await ok('browser_open', { sandbox: 'web', url: `${SITE}/` });
    assert.equal(opened.structuredContent?.title, 'Test form');
    assert.equal(opened.structuredContent?.started, true);
    const snapshot =
      opened.content.find((c) => c.type === 'text' && /\[ref=e\d+\]/.test(c.text ?? ''))?.text ?? '';
    const name = refOf(snapshot, /textbox "Name"/);
    await ok('browser_fill', { sandbox: 'web', ref: name, value: 'Grace' });
    const clicked = await ok('browser_click', { sandbox: 'web', ref: refOf(snapshot, /button "Send"/) });
    assert.ok(clicked.content.some((c) => /Hello, Grace \(free\)/.test(c.text ?? '')));

    const shot = await ok('browser_screenshot', { sandbox: 'web' });
    const image = shot.content.find((c) => c.type === 'image');
    assert.equal(image?.mimeType, 'image/png');
    const png = Buffer.from(image?.data ?? '', 'base64');
    assert.equal(png.subarray(1, 4).toString(), 'PNG');
    assert.equal(shot.structuredContent?.bytes, png.length);

    const ev = await ok('browser_events', { sandbox: 'web' });
    const events = ev.structuredContent?.events as { type: string; text?: string }[];
    assert.ok(events.some((e) => e.type === 'console' && e.text === 'hello from the page'));

    assert.deepEqual((await ok('browser_close', { sandbox: 'web' })).structuredContent, { closed: true });
    await ok('sandbox_create', { name: 'plain' });
    const refused = await call('browser_open', { sandbox: 'plain', url: 'about:blank' });
    assert.equal(refused.isError, true);
    assert.match(refused.content[0]?.text ?? '', /no Chromium.*debian-browser/);
  });
});
