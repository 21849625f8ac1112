/**
 * Attack: command injection through wait_for_text's `path` and `marker`. forkd's own MCP server
 * implemented wait_for_text by running `sh -c "tail -c 4096 {path}"` with the path pasted into the shell
 * line, so a path such as `/tmp/x; touch /tmp/pwned` ran a command of the caller's choosing (with the
 * privileges of whatever runs the poll). Precedent: CWE-78 OS command injection through an MCP tool's
 * argument, as in mcp-remote (CVE-2025-6514).
 * Contained when: through both toolsets' wait_for_text (forkd's and the canonical one), no payload runs —
 * no file the payloads would create appears — and a file whose name is the payload itself is read
 * literally (its marker is found), i.e. the path reaches the file API as a name, never a shell.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { createDefaultSandbox, createForkboxMcpServer } from '../../src/protocol/mcp/server.ts';
import type { ForkboxApi } from '../../src/service/api.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';

const skip = nativeUnavailable();

const PAYLOADS = [
  '/tmp/a"; touch /tmp/pwned-1; echo "',
  '/tmp/a; touch /tmp/pwned-2',
  '/tmp/a$(touch /tmp/pwned-3)',
  '/tmp/a`touch /tmp/pwned-4`',
  "/tmp/a' ; touch /tmp/pwned-5 ; '",
  '/tmp/a\ntouch /tmp/pwned-6',
  '/tmp/a | touch /tmp/pwned-7',
];

describe('abuse: command injection through wait_for_text', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let api: ForkboxApi;
  let id: string;
  let mcp: Client;
  let canonical: Client;
  const closers: (() => Promise<void>)[] = [];

  async function connect(toolsets: string[]): Promise<Client> {
    const server = createForkboxMcpServer({
      api,
      defaults: createDefaultSandbox(),
      toolsets,
      version: 'test',
    });
    const [ct, st] = InMemoryTransport.createLinkedPair();
    await server.connect(st);
    const client = new Client({ name: 'abuse', version: '1' });
    await client.connect(ct);
    closers.push(
      () => client.close(),
      () => server.close(),
    );
    return client;
  }

  before(async () => {
    fx = await openNative();
    api = fx.opened.api;
    id = (await api.createSandbox({})).id;
    mcp = await connect(['forkd']);
    canonical = await connect(['forkbox']);
  });
  after(async () => {
    for (const c of closers) await c();
    await fx?.close();
  });

  const forkdWait = async (path: string, marker: string) => {
    const r = (await mcp.callTool({
      name: 'wait_for_text',
      arguments: { sandbox_id: id, path, marker, timeout_secs: 0.2, poll_interval_ms: 50 },
    })) as CallToolResult;
    const text = r.content[0]?.type === 'text' ? r.content[0].text : '';
    assert.notEqual(r.isError, true, text);
    return JSON.parse(text) as { found: boolean; last_excerpt: string };
  };

  const canonicalWait = async (path: string, marker: string) => {
    const r = (await canonical.callTool({
      name: 'wait_for_text',
      arguments: { sandbox: id, path, marker, timeout_s: 0.2 },
    })) as CallToolResult;
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    return r.structuredContent as { found: boolean };
  };

  it('no payload in path or marker runs, through either toolset', async () => {
    for (const p of PAYLOADS) {
      assert.equal((await forkdWait(p, 'READY')).found, false);
      assert.equal((await forkdWait('/tmp/none', p.slice(5))).found, false);
      assert.equal((await canonicalWait(p, 'READY')).found, false);
      assert.equal((await canonicalWait('/tmp/none', p.slice(5))).found, false);
    }
    const ls = await api.exec(id, { argv: ['sh', '-c', 'ls -A /tmp; ls -A /'] });
    assert.doesNotMatch(ls.stdout, /pwned/, 'no payload ran');
  });

  it('a file named like a payload is read literally', async () => {
    for (const p of PAYLOADS) {
      await api.writeFile(id, p, Buffer.from(`payload file READY\n`), { createDirs: true });
      const seen = await forkdWait(p, 'READY');
      assert.equal(seen.found, true, JSON.stringify(p));
      assert.equal(seen.last_excerpt, 'payload file READY\n');
      assert.equal((await canonicalWait(p, 'READY')).found, true, JSON.stringify(p));
    }
  });
});
