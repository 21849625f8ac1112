/**
 * MCP on the TCP listener's app, driven by the official SDK client through app.request() (no sockets,
 * the real engine over the fake runtime): both eras, per-tenant legacy sessions and their limit.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { createHttpApp } from '../../src/protocol/http/app.ts';
import { guardConfig } from '../../src/protocol/http/guards.ts';
import { createTokenStore, parseTokenFile } from '../../src/protocol/http/tokens.ts';
import type { CallerContext } from '../../src/service/engine.ts';
import { createTestEngine, type RecordedApi } from '../helpers/test-engine.ts';

const A = 'alice-token-0123456789abcdef';
const B = 'bob-token-0123456789abcdef';

function setup() {
  const t = createTestEngine();
  const apis = new Map<string, RecordedApi>();
  const attached: string[] = [];
  const detached: string[] = [];
  const scoped: CallerContext[] = [];
  const http = createHttpApp({
    engine: {
      scoped(ctx) {
        scoped.push(ctx);
        const api = t.scoped(ctx);
        apis.set(ctx.tenant, api);
        return api;
      },
      attachSession(id) {
        attached.push(id);
        return () => detached.push(id);
      },
    },
    version: 't',
    tokens: createTokenStore(parseTokenFile(`${A} alice\n${B} bob\n`)),
    guard: () => guardConfig({ listenHost: '127.0.0.1', port: 7777 }),
    mcp: { maxSessionsPerTenant: 1 },
  });
  // The client's fetch goes straight into the app, with the Host header a socket would carry.
  const fetchApp = async (url: string | URL, init?: RequestInit) => {
    const req = new Request(url, init);
    req.headers.set('host', '127.0.0.1:7777');
    return http.app.request(req);
  };
  async function connect(token: string, mode?: 'auto' | { pin: string }) {
    const client = new Client({ name: 't', version: '1' }, mode ? { versionNegotiation: { mode } } : {});
    const transport = new StreamableHTTPClientTransport(new URL('http://127.0.0.1:7777/mcp'), {
      authProvider: { token: async () => token },
      fetch: fetchApp,
    });
    await client.connect(transport);
    return { client, transport };
  }
  return { http, apis, attached, detached, scoped, connect, fetchApp };
}

describe('http app: MCP', () => {
  it('legacy clients get a session of their tenant, tied to an engine client session', async () => {
    const { http, connect, attached, detached, scoped, fetchApp } = setup();
    const { client, transport } = await connect(A);
    const sid = transport.sessionId as string;
    assert.ok(sid);
    assert.deepEqual(attached, [sid]);
    assert.ok(scoped.some((s) => s.tenant === 'alice' && s.session === sid));
    const r = (await client.callTool({ name: 'sandbox_list', arguments: {} })) as CallToolResult;
    assert.notEqual(r.isError, true);

    // Bob presenting alice's session id: not found, exactly like an unknown id.
    const hijack = await fetchApp('http://127.0.0.1:7777/mcp', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${B}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sid,
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(hijack.status, 404);

    // One session per tenant in this setup: a second initialize by alice is refused, bob's is not.
    await assert.rejects(connect(A), /429|too many open MCP sessions/);
    const bob = await connect(B);
    assert.ok(bob.transport.sessionId && bob.transport.sessionId !== sid);

    await transport.terminateSession();
    assert.deepEqual(detached, [sid], 'DELETE ends the engine session');
    await client.close();
    await bob.client.close();
    await http.close();
    assert.equal(detached.length, 2, 'closing the app ends the remaining sessions');
  });

  it('modern clients are served statelessly with the tenant-scoped API', async () => {
    const { http, connect, apis } = setup();
    const { client, transport } = await connect(B, { pin: '2026-07-28' });
    assert.equal(client.getProtocolEra(), 'modern');
    assert.equal(transport.sessionId, undefined);
    const tools = await client.listTools();
    assert.ok(tools.tools.some((t) => t.name === 'exec_run'));
    const r = (await client.callTool({
      name: 'exec_run',
      arguments: { argv: ['echo', 'x'] },
    })) as CallToolResult;
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    assert.equal((await apis.get('bob')?.listSandboxes())?.length, 1, "bob's default sandbox");
    assert.equal(apis.get('alice'), undefined, 'nothing touched alice');
    await client.close();
    await http.close();
  });
});
