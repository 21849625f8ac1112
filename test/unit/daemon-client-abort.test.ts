/**
 * An aborted request reaches the daemon as its caller leaving: `withSignal(signal)` closes the request's
 * connection when the signal fires, so the server sees the request close while its exec is still
 * streaming (the daemon cancels the exec on that). Against a stand-in server on a Unix socket that
 * streams one output line and then holds the response open.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createDaemonClient, type DaemonClient } from '../../src/transports/daemon-client.ts';
import { waitFor as waitUntil } from '../helpers/wait-for.ts';

/** Poll `cond` until it holds; fail after `ms`. */
async function waitFor(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  await waitUntil(cond, { what, timeoutMs: ms, intervalMs: 10 });
}

/** `p`, or a failure naming `what` after `ms`. */
function within<T>(p: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

describe('daemon client abort', () => {
  let dir: string;
  let server: Server;
  let client: DaemonClient;
  const requests: string[] = [];
  let closedWhileStreaming = 0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fbx-abort-'));
    server = createServer((req, res) => {
      requests.push(`${req.method} ${req.url}`);
      req.resume();
      if (req.url === '/v1/sandboxes/sb1/exec') {
        res.writeHead(200, { 'content-type': 'application/x-ndjson' });
        res.write(`${JSON.stringify({ type: 'output', seq: 1, stream: 'stdout', data: 'aGk=' })}\n`);
        // Never finishes by itself: only the client leaving ends it.
        res.on('close', () => {
          if (!res.writableEnded) closedWhileStreaming++;
        });
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    await new Promise<void>((r) => server.listen(join(dir, 'forkbox.sock'), r));
    client = createDaemonClient({ socketPath: join(dir, 'forkbox.sock') });
  });
  after(async () => {
    client.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('closes a streaming exec request when the signal fires, and rejects with its reason', async () => {
    const ac = new AbortController();
    const chunks: string[] = [];
    const call = client.withSignal(ac.signal).exec(
      'sb1',
      { argv: ['sleep', '1000'] },
      {
        onOutput: (c) => {
          chunks.push(c.data.toString());
        },
      },
    );
    await waitFor(() => chunks.length > 0, 'the first output chunk');
    assert.deepEqual(chunks, ['hi']);
    const reason = new Error('interrupted');
    ac.abort(reason);
    await assert.rejects(within(call, 'the aborted call to reject'), (e) => e === reason);
    await waitFor(() => closedWhileStreaming === 1, 'the server to see the request close');
  });

  it('does not send a request whose signal has already fired', async () => {
    const before = requests.length;
    const ac = new AbortController();
    ac.abort(new Error('early'));
    await assert.rejects(client.withSignal(ac.signal).listSandboxes(), /early/);
    assert.equal(requests.length, before);
  });

  it('leaves the base client and other requests alone', async () => {
    const ac = new AbortController();
    const scoped = client.withSignal(ac.signal);
    assert.deepEqual(await scoped.status(), { ok: true });
    ac.abort(new Error('later'));
    // The base client shares the connection pool but not the signal.
    assert.deepEqual(await client.status(), { ok: true });
    assert.equal(await client.health(), true);
  });
});
