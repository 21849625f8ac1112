/**
 * The daemon client's NDJSON reading (streamed exec output and results): lines split anywhere across
 * chunks — inside a UTF-8 character too — arrive whole and intact, and a line that never ends fails the
 * call with `too_large` once it passes MAX_LINE_BYTES instead of growing in memory (a remote daemon is as
 * untrusted as any server). Against a stand-in server on a Unix socket.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { isForkboxError } from '../../src/domain/errors.ts';
import { createDaemonClient, type DaemonClient } from '../../src/transports/daemon-client.ts';
import { MAX_LINE_BYTES } from '../../src/transports/daemon-request.ts';

let dir: string;
let server: Server;
let client: DaemonClient;
let sent = 0;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fbx-bounds-'));
  const chunk = Buffer.alloc(1024 * 1024, 'a');
  server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    if (req.url === '/v1/sandboxes/split/exec') {
      const text = `${JSON.stringify({ type: 'output', seq: 1, stream: 'stdout', data: 'aGk=' })}\n${JSON.stringify({ type: 'result', result: { note: 'déjà vu …' } })}\n`;
      const bytes = Buffer.from(text);
      // Cut inside the 'é' (two bytes in UTF-8) and inside the first line; each piece its own chunk.
      const cut = bytes.indexOf(Buffer.from('é')) + 1;
      const pieces = [bytes.subarray(0, 10), bytes.subarray(10, cut), bytes.subarray(cut)];
      const next = () => {
        const p = pieces.shift();
        if (!p) return void res.end();
        res.write(p);
        setTimeout(next, 20);
      };
      next();
      return;
    }
    // One line without end, written as fast as the client reads it, until the client leaves.
    const pump = () => {
      while (!res.destroyed && sent <= 2 * MAX_LINE_BYTES) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
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

test('an endless streamed line fails with too_large and closes the connection', async () => {
  await assert.rejects(client.exec('sb1', { argv: ['yes'] }, { onOutput: () => undefined }), (e) => {
    assert.ok(isForkboxError(e), String(e));
    assert.equal(e.code, 'too_large');
    assert.match(e.message, /streamed line/);
    return true;
  });
  // The client stopped reading near the limit, not at the end of what the server had to send.
  assert.ok(sent < 2 * MAX_LINE_BYTES, `the server sent ${sent} bytes`);
});

test('lines split across chunks, inside a UTF-8 character too, arrive whole', async () => {
  const chunks: string[] = [];
  const r = await client.exec('split', { argv: ['x'] }, { onOutput: (c) => chunks.push(c.data.toString()) });
  assert.deepEqual(chunks, ['hi']);
  assert.deepEqual(r, { note: 'déjà vu …' });
});
