/**
 * Files through the v1 TypeScript SDK (`@modelcontextprotocol/sdk` 1.x) over stdio (`forkbox mcp`) and
 * through REST on the daemon's HTTP listener, against a real `forkbox serve` (issue #12 items 4 and 9):
 * a binary file through every file tool is byte-exact or refused clearly; eight concurrent conditional
 * writes carrying one ETag give exactly one success, over MCP and over REST (ETag / If-Match headers),
 * with one ETag scheme on both; a 100 MiB file goes in and out in chunks with the same sha256, no message
 * bigger than a chunk.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { SIZES } from '../../src/domain/limits.ts';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { type TextResult, textFields } from '../helpers/mcp-result.ts';
import { forkboxMcpServer } from '../helpers/mcp-stdio.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';

type SC = Record<string, unknown>;

const MiB = 1024 * 1024;

const errorText = (r: TextResult): string => r.content.map((b) => b.text ?? '').join('\n');
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('files through the v1 SDK over stdio and REST', { skip: nativeUnavailable() ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;
  let client: Client;
  let sandbox: string;

  const call = async (name: string, args: SC) =>
    (await client.callTool({ name, arguments: { sandbox, ...args } }, CallToolResultSchema, {
      timeout: 120_000,
    })) as TextResult;
  const ok = async (name: string, args: SC) => {
    const r = await call(name, args);
    assert.notEqual(r.isError, true, `${name}: ${errorText(r).slice(0, 2000)}`);
    return textFields(r);
  };
  const refused = async (name: string, args: SC, code: string, message: RegExp) => {
    const r = await call(name, args);
    assert.equal(r.isError, true, `${name} should have been refused`);
    assert.match(errorText(r), new RegExp(`code: ${code}`));
    assert.match(errorText(r), message);
  };
  const rest = (path: string, init: RequestInit = {}) =>
    fetch(`${daemon?.url}/v1/sandboxes/${sandbox}/files/${path}`, init);

  before(async () => {
    stateDir = makeStateDir();
    daemon = await startServe(stateDir);
    client = new Client({ name: 'forkbox-files', version: '1' });
    await client.connect(new StdioClientTransport(forkboxMcpServer(stateDir)));
    const created = await fetch(`${daemon.url}/v1/sandboxes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(created.status, 201, await created.clone().text());
    sandbox = ((await created.json()) as { id: string }).id;
  });
  after(async () => {
    await client?.close().catch(() => undefined);
    await stopServeAndClean(daemon?.child, stateDir);
  });

  it('a binary file through every file tool: byte-exact, or refused naming the binary-safe way', async () => {
    const bin = Buffer.concat([Buffer.from([0xff, 0xfe, 0x00, 0x80, 0xc3]), randomBytes(4096)]);
    const w = await ok('file_write', {
      path: '/work/bin.dat',
      content: bin.toString('base64'),
      encoding: 'base64',
      create_dirs: true,
    });
    assert.equal(w.size, bin.length);
    const r = await ok('file_read', { path: '/work/bin.dat', length: SIZES.mcpFileBytes });
    assert.equal(r.encoding, 'base64', 'binary content comes back as base64, and says so');
    assert.ok(Buffer.from(r.content as string, 'base64').equals(bin));
    assert.equal(r.etag, w.etag);
    const st = await ok('file_stat', { path: '/work/bin.dat' });
    assert.deepEqual([st.size, st.etag], [bin.length, w.etag]);
    await refused(
      'file_edit',
      { path: '/work/bin.dat', old_string: 'a', new_string: 'b' },
      'invalid_argument',
      /not UTF-8.*file_write encoding base64/,
    );
    await ok('file_move', { from: '/work/bin.dat', to: '/work/moved.dat' });
    const listed = await ok('file_list', { path: '/work' });
    assert.ok(JSON.stringify(listed).includes('moved.dat'));
    const again = await ok('file_read', { path: '/work/moved.dat', length: SIZES.mcpFileBytes });
    assert.ok(Buffer.from(again.content as string, 'base64').equals(bin), 'unchanged by the refused edit');
    const viaRest = await rest(`content?path=${encodeURIComponent('/work/moved.dat')}`);
    assert.ok(Buffer.from(await viaRest.arrayBuffer()).equals(bin), 'REST reads the same bytes');
    await ok('file_delete', { path: '/work/moved.dat' });
    const tooBig = randomBytes(SIZES.mcpFileBytes + 3).toString('base64');
    await refused(
      'file_write',
      { path: '/work/too-big.bin', content: tooBig, encoding: 'base64' },
      'invalid_argument',
      /content/,
    );

    // Text paged across a multi-byte character: each page is whole characters, utf8.
    const text = 'é'.repeat(10);
    await ok('file_write', { path: '/work/t.txt', content: text });
    const p1 = await ok('file_read', { path: '/work/t.txt', length: 5 });
    assert.deepEqual([p1.encoding, p1.content, p1.bytes, p1.truncated], ['utf8', 'éé', 4, true]);
    const p2 = await ok('file_read', { path: '/work/t.txt', offset: 4 });
    assert.equal(`${p1.content}${p2.content}`, text);
  });

  it('eight concurrent conditional writes with one ETag: exactly one succeeds, over MCP and over REST', async () => {
    const w = await ok('file_write', { path: '/work/c.txt', content: 'v0' });
    const head = await rest(`stat?path=${encodeURIComponent('/work/c.txt')}`);
    assert.equal(head.headers.get('etag'), `"${w.etag}"`, 'one ETag scheme on MCP and REST');

    const mcp = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        call('file_write', { path: '/work/c.txt', content: `mcp ${i}`, if_match: w.etag }),
      ),
    );
    const wins = mcp.filter((r) => r.isError !== true);
    assert.equal(wins.length, 1, 'exactly one MCP write wins');
    for (const r of mcp.filter((x) => x.isError === true)) assert.match(errorText(r), /code: conflict/);
    const winner = textFields(wins[0] as TextResult);
    const now = await ok('file_read', { path: '/work/c.txt' });
    assert.equal(now.etag, winner.etag);

    const got = await rest(`content?path=${encodeURIComponent('/work/c.txt')}`);
    const etag = got.headers.get('etag');
    assert.equal(etag, `"${winner.etag}"`);
    const puts = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        rest(`content?path=${encodeURIComponent('/work/c.txt')}`, {
          method: 'PUT',
          headers: { 'content-type': 'application/octet-stream', 'if-match': etag ?? '' },
          body: `rest ${i}`,
        }),
      ),
    );
    const statuses = puts.map((p) => p.status).sort();
    assert.deepEqual(statuses, [200, 409, 409, 409, 409, 409, 409, 409]);
    for (const p of puts.filter((x) => x.status === 409)) {
      assert.equal(((await p.json()) as { error: { code: string } }).error.code, 'conflict');
    }
    const won = puts.find((p) => p.status === 200) as Response;
    assert.equal(won.headers.get('etag'), `"${((await won.json()) as { etag: string }).etag}"`);
  });

  it('a 100 MiB file goes in and out in chunks over stdio with the same sha256', async () => {
    const size = 100 * MiB;
    const data = randomBytes(size);
    const chunk = SIZES.mcpFileBytes;
    for (let off = 0; off < size; off += chunk) {
      const part = data.subarray(off, off + chunk).toString('base64');
      const args: SC = { path: '/work/big.bin', content: part, encoding: 'base64' };
      if (off > 0) args.append = true;
      const w = await ok('file_write', args);
      assert.equal(w.size, Math.min(off + chunk, size));
    }
    const parts: Buffer[] = [];
    let offset = 0;
    for (;;) {
      const r = await ok('file_read', { path: '/work/big.bin', offset, length: chunk, encoding: 'base64' });
      const b = Buffer.from(r.content as string, 'base64');
      parts.push(b);
      offset += b.length;
      if (r.truncated !== true) break;
    }
    assert.equal(offset, size);
    assert.equal(sha(Buffer.concat(parts)), sha(data));
    const inside = await ok('exec_run', { command: 'sha256sum /work/big.bin' });
    assert.equal((inside.stdout as string).split(' ')[0], sha(data));
  });
});
