/**
 * What a browser may send the daemon (cdp-bridge.ts): a "browser" behind the relay — as a process in
 * the sandbox posing as Chromium could be — that pours out 48 MiB as fast as it can gets its connection
 * cut past BROWSER.relayWindowBytes (32 MiB per 10 s), so Playwright in the daemon never holds it all; the
 * bridge says why. A real bridge on a real Unix socket; the sandbox's side is a local socket pair.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openCdpBridge } from '../../src/browser/cdp-bridge.ts';
import { BROWSER } from '../../src/domain/limits.ts';

describe('the browser relay under a flood', () => {
  it('cuts a connection that sends more than its budget', { timeout: 30_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'forkbox-relay-'));
    // The "browser": a server that answers any connection with 48 MiB.
    const flood = createServer((s) => {
      const chunk = Buffer.alloc(1024 * 1024, 120);
      let sent = 0;
      const more = () => {
        while (sent < 48 && s.write(chunk)) sent++;
        if (sent < 48) s.once('drain', more);
      };
      s.on('error', () => undefined);
      more();
    });
    await new Promise<void>((r) => flood.listen(0, '127.0.0.1', () => r()));
    const port = (flood.address() as { port: number }).port;
    const errors: string[] = [];
    const bridge = await openCdpBridge({
      dir,
      path: '/devtools/browser/x',
      dial: async () => connect(port, '127.0.0.1'),
      onError: (e) => errors.push(String(e)),
    });
    try {
      const sock = bridge.url.slice('ws+unix://'.length).split(':')[0] ?? '';
      const client: Socket = connect(sock);
      let got = 0;
      client.on('data', (b: Buffer) => {
        got += b.length;
      });
      await new Promise<void>((resolve) => client.on('close', () => resolve()));
      assert.ok(got < 48 * 1024 * 1024, `the client got ${got} bytes: the flood was not cut`);
      assert.ok(got >= BROWSER.relayWindowBytes - 2 * 1024 * 1024, `it got up to the budget (${got})`);
      assert.match(errors.join('\n'), /sent over 33554432 bytes/);
    } finally {
      bridge.close();
      flood.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
