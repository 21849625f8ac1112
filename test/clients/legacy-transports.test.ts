/**
 * The transports older MCP clients speak, against a real `forkbox serve` with a token file: the v1 SDK's
 * SSEClientTransport on the 2024-11-05 HTTP+SSE transport (`GET /sse` + `POST /messages`), mcp-remote in
 * its `sse-only` mode bridging a stdio client to it, and plain JSON-RPC `POST /mcp` (what clients of
 * microsandbox's `msb server` send: no event-stream Accept, no session, no initialize) answered as one
 * JSON body. All behind the same token: none, or another tenant's, gets nowhere.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { ROOT, type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { type TextResult, textFields } from '../helpers/mcp-result.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();
const TOKEN = 'tok-legacy-alice-7d1e3a9c5b2f4e60';
const OTHER = 'tok-legacy-bob-2c8e6a4d0b9f1e37';
const auth = (t: string) => ({ authorization: `Bearer ${t}` });

describe('legacy MCP transports: HTTP+SSE and plain JSON-RPC', { skip: skip ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;

  const sseClient = async (token = TOKEN) => {
    const client = new Client({ name: 'v1-sse', version: '1' });
    const headers = auth(token);
    await client.connect(
      new SSEClientTransport(new URL(`${daemon?.url}/sse`), {
        requestInit: { headers },
        eventSourceInit: {
          fetch: (url, init) => fetch(url, { ...init, headers: { ...init?.headers, ...headers } }),
        },
      }),
    );
    return client;
  };
  const ok = async (client: Client, name: string, args: Record<string, unknown>) => {
    const r = (await client.callTool({ name, arguments: args }, CallToolResultSchema)) as TextResult;
    assert.notEqual(r.isError, true, `${name}: ${JSON.stringify(r.content).slice(0, 2000)}`);
    return textFields(r);
  };
  const plain = (body: unknown, token = TOKEN, headers: Record<string, string> = {}) =>
    fetch(`${daemon?.url}/mcp`, {
      method: 'POST',
      headers: { ...auth(token), 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  before(async () => {
    stateDir = makeStateDir();
    const tokens = join(stateDir, 'tokens');
    writeFileSync(tokens, `${TOKEN} alice\n${OTHER} bob\n`, { mode: 0o600 });
    daemon = await startServe(stateDir, ['--token-file', tokens]);
  });
  after(async () => {
    await stopServeAndClean(daemon?.child, stateDir);
  });

  it('the v1 SDK over HTTP+SSE: tools, a command, Python state kept between calls', async () => {
    const client = await sseClient();
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'exec_run'));
      assert.equal((await ok(client, 'exec_run', { command: 'echo hi' })).stdout, 'hi\n');
      await ok(client, 'code_run', { code: 'kept = 6 * 7' });
      assert.equal((await ok(client, 'code_run', { code: 'kept' })).value, '42');
    } finally {
      await client.close();
    }
  });

  it("a session answers only its opener's token; none gets 401", async () => {
    const res = await fetch(`${daemon?.url}/sse`, { headers: auth(TOKEN) });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let head = '';
    while (!head.includes('\n\n')) {
      const { value, done } = await reader.read();
      if (done) break;
      head += new TextDecoder().decode(value);
    }
    const m = /^event: endpoint\ndata: (\/messages\?sessionId=[0-9a-f-]{36})\n\n/.exec(head);
    assert.ok(m?.[1], head);
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const post = (token?: string) =>
      fetch(`${daemon?.url}${m[1]}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? auth(token) : {}) },
        body: ping,
      });
    assert.equal((await post(OTHER)).status, 404, "another tenant's token: not found");
    assert.equal((await post()).status, 401);
    assert.equal((await fetch(`${daemon?.url}/sse`)).status, 401);
    assert.equal((await post(TOKEN)).status, 202);
    let rest = '';
    while (!rest.includes('"id":1')) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    const answer = /event: message\ndata: (.*)\n\n/.exec(rest);
    assert.deepEqual(JSON.parse(answer?.[1] ?? 'null'), { result: {}, jsonrpc: '2.0', id: 1 });
    await reader.cancel();
  });

  it('mcp-remote in sse-only mode', async () => {
    const config = mkdtempSync(join(tmpdir(), 'forkbox-mcp-remote-'));
    const client = new Client({ name: 'via-mcp-remote-sse', version: '1' });
    try {
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [
            join(ROOT, 'node_modules/mcp-remote/dist/proxy.js'),
            `${daemon?.url}/sse`,
            '--allow-http',
            '--transport',
            'sse-only',
            '--header',
            `Authorization:Bearer ${TOKEN}`,
          ],
          env: { ...(process.env as Record<string, string>), MCP_REMOTE_CONFIG_DIR: config },
          cwd: ROOT,
          stderr: 'ignore',
        }),
      );
      assert.equal((await ok(client, 'exec_run', { command: 'echo via-sse' })).stdout, 'via-sse\n');
    } finally {
      await client.close();
      rmSync(config, { recursive: true, force: true });
    }
  });

  it('plain JSON-RPC POST /mcp: one JSON body, no session, no initialize needed', async () => {
    const list = await plain({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    assert.equal(list.status, 200);
    assert.match(list.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(list.headers.get('mcp-session-id'), null);
    const tools = ((await list.json()) as { result: { tools: { name: string }[] } }).result.tools;
    assert.ok(tools.some((t) => t.name === 'exec_run'));

    const call = await plain(
      {
        jsonrpc: '2.0',
        id: 'c1',
        method: 'tools/call',
        params: { name: 'exec_run', arguments: { command: 'echo plain' } },
      },
      TOKEN,
      { accept: 'application/json' },
    );
    assert.equal(call.status, 200);
    const body = (await call.json()) as { id: string; result: TextResult };
    assert.equal(body.id, 'c1');
    assert.equal(textFields(body.result).stdout, 'plain\n');

    const init = await plain({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'msb', version: '1' } },
    });
    assert.equal(init.status, 200);
    assert.equal(init.headers.get('mcp-session-id'), null, 'an initialize opens no session');
    const r = (await init.json()) as { result: { protocolVersion: string } };
    assert.equal(r.result.protocolVersion, '2024-11-05');
    assert.equal(
      (await plain({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, 'not-a-token-0000000000')).status,
      401,
    );
  });
});
