/**
 * A toolset per path on the TCP listener: /mcp/<name> serves that toolset alone behind the same guards
 * as /mcp (token → tenant; another tenant's sandboxes are not found), /mcp keeps the canonical one, and
 * an unknown toolset is a 404 naming the paths that exist. Driven by the official SDK client through
 * app.request() over the real engine and the fake runtime.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createHttpApp } from '../../src/protocol/http/app.ts';
import { guardConfig } from '../../src/protocol/http/guards.ts';
import { createTokenStore, parseTokenFile } from '../../src/protocol/http/tokens.ts';
import { createTestEngine } from '../helpers/test-engine.ts';

const A = 'alice-token-0123456789abcdef';
const B = 'bob-token-0123456789abcdef';

function setup() {
  const t = createTestEngine();
  const http = createHttpApp({
    engine: { scoped: (ctx) => t.scoped(ctx), attachSession: () => () => undefined },
    version: 't',
    tokens: createTokenStore(parseTokenFile(`${A} alice\n${B} bob\n`)),
    guard: () => guardConfig({ listenHost: '127.0.0.1', port: 7777 }),
  });
  const fetchApp = async (url: string | URL, init?: RequestInit) => {
    const req = new Request(url, init);
    req.headers.set('host', '127.0.0.1:7777');
    return http.app.request(req);
  };
  async function connect(token: string, path: string) {
    const client = new Client({ name: 't', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:7777${path}`), {
        authProvider: { token: async () => token },
        fetch: fetchApp,
      }),
    );
    return client;
  }
  return { t, http, fetchApp, connect };
}

const text = (r: unknown) => ((r as { content: { text: string }[] }).content[0]?.text ?? '') as string;

describe('http app: /mcp/<toolset>', () => {
  it('serves the toolset alone, under the caller tenant', async () => {
    const { t, http, connect } = setup();
    const alice = await connect(A, '/mcp/forkd');
    const names = (await alice.listTools()).tools.map((x) => x.name);
    assert.equal(names.length, 11);
    assert.ok(names.includes('spawn_sandboxes') && !names.includes('sandbox_create'));
    const canonical = await connect(A, '/mcp');
    assert.ok((await canonical.listTools()).tools.some((x) => x.name === 'sandbox_create'));

    const spawned = await alice.callTool({ name: 'spawn_sandboxes', arguments: { snapshot_tag: 'default' } });
    assert.notEqual(spawned.isError, true, text(spawned));
    const [sb] = JSON.parse(text(spawned)) as { id: string }[];
    assert.ok(sb);
    const mine = await alice.callTool({ name: 'get_sandbox', arguments: { sandbox_id: sb.id } });
    assert.notEqual(mine.isError, true, text(mine));

    const bob = await connect(B, '/mcp/forkd');
    const theirs = await bob.callTool({ name: 'get_sandbox', arguments: { sandbox_id: sb.id } });
    assert.equal(theirs.isError, true);
    assert.match(text(theirs), /^Error executing tool get_sandbox: 404 /);

    for (const c of [alice, canonical, bob]) await c.close();
    await http.close();
    await t.close();
  });

  it('needs the token, and an unknown toolset is a 404 naming the paths', async () => {
    const { t, http, fetchApp } = setup();
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const anon = await fetchApp('http://127.0.0.1:7777/mcp/forkd', { method: 'POST', headers, body });
    assert.equal(anon.status, 401);
    const unknown = await fetchApp('http://127.0.0.1:7777/mcp/nope', {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${A}` },
      body,
    });
    assert.equal(unknown.status, 404);
    assert.match(
      await unknown.text(),
      /no toolset 'nope' here\. Toolsets: \/mcp\/forkbox, \/mcp\/browser, \/mcp\/forkd/,
    );
    await http.close();
    await t.close();
  });
});
