/**
 * MCP on the TCP listener's app, driven by the official SDK client through app.request() (no sockets,
 * the real engine over the fake runtime): both eras, per-tenant legacy sessions, their limit (live sessions only, a 429
 * that says which limit and when it frees), DELETE ending a session's sandboxes at once, and a session
 * resumed by its id after the listener lost it (a daemon restart) while its default sandbox lives.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { createHttpApp } from '../../src/protocol/http/app.ts';
import { guardConfig } from '../../src/protocol/http/guards.ts';
import { createTokenStore, parseTokenFile } from '../../src/protocol/http/tokens.ts';
import type { CallerContext } from '../../src/service/engine.ts';
import { createTestEngine, type RecordedApi, type TestEngine } from '../helpers/test-engine.ts';

const A = 'alice-token-0123456789abcdef';
const B = 'bob-token-0123456789abcdef';
const H = 'host-token-0123456789abcdef';

function setup(
  t: TestEngine = createTestEngine(),
  mcp: Record<string, number> = { maxSessionsPerTenant: 1 },
) {
  const apis = new Map<string, RecordedApi>();
  const attached: string[] = [];
  const detached: string[] = [];
  const detachGrace: (number | undefined)[] = [];
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
        return (end) => {
          detached.push(id);
          detachGrace.push(end?.graceMs);
        };
      },
    },
    version: 't',
    tokens: createTokenStore(parseTokenFile(`${A} alice\n${B} bob\n${H} default\n`)),
    guard: () => guardConfig({ listenHost: '127.0.0.1', port: 7777 }),
    mcp,
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
  return { t, http, apis, attached, detached, detachGrace, scoped, connect, fetchApp };
}

describe('http app: MCP', () => {
  it('legacy clients get a session of their tenant, tied to an engine client session', async () => {
    const { t, http, connect, attached, detached, detachGrace, scoped, fetchApp } = setup();
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

    // One live session per tenant in this setup: a second initialize by alice, whose session was just
    // used, is refused with the limit and when it frees; bob's is not.
    const init = await fetchApp('http://127.0.0.1:7777/mcp', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${A}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    assert.equal(init.status, 429);
    assert.ok(Number(init.headers.get('retry-after')) >= 1, 'Retry-After says when a slot frees');
    assert.match(await init.text(), /limit is 1 live sessions per tenant.*frees in about \d+ s.*DELETE/);
    const bob = await connect(B);
    assert.ok(bob.transport.sessionId && bob.transport.sessionId !== sid);

    await transport.terminateSession();
    assert.deepEqual(detached, [sid], 'DELETE ends the engine session');
    assert.deepEqual(detachGrace, [0], '... at once: the client ended it');
    await client.close();
    await bob.client.close();
    await http.close();
    assert.equal(detached.length, 2, 'closing the app ends the remaining sessions');
    assert.deepEqual(detachGrace, [0, undefined], '... with the grace: their clients may come back');
    await t.close();
  });

  it('modern clients are served statelessly with the tenant-scoped API', async () => {
    const { t, http, connect, apis } = setup();
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
    await t.close();
  });

  it('host-wide tools are listed only to the host tenant, in both eras', async () => {
    const { t, http, connect } = setup(createTestEngine(), { maxSessionsPerTenant: 4 });
    const names = async (token: string, mode?: 'auto' | { pin: string }) => {
      const { client } = await connect(token, mode);
      const list = (await client.listTools()).tools.map((x) => x.name);
      await client.close();
      return list;
    };
    const hostOnly = ['template_define', 'template_delete'];
    for (const mode of [{ pin: '2026-07-28' } as const, undefined]) {
      const bob = await names(B, mode);
      assert.ok(bob.includes('template_list'), 'other tenants still see the templates');
      for (const n of hostOnly) assert.ok(!bob.includes(n), `${n} is not offered to tenant bob`);
      const host = await names(H, mode);
      for (const n of hostOnly) assert.ok(host.includes(n), `${n} is offered to the host tenant`);
    }
    await http.close();
    await t.close();
  });

  it('a session the listener lost (daemon restart) is resumed by its id while its default sandbox lives', async () => {
    const first = setup(createTestEngine(), { maxSessionsPerTenant: 4 });
    let target = first.fetchApp;
    const client = new Client({ name: 't', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL('http://127.0.0.1:7777/mcp'), {
      authProvider: { token: async () => A },
      fetch: (u, i) => target(u, i),
    });
    await client.connect(transport);
    const sid = transport.sessionId as string;
    const r = (await client.callTool({ name: 'code_run', arguments: { code: 'x = 1' } })) as CallToolResult;
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    // Every call of the engine (only alice uses it here), through whichever scoped API served it.
    const calls = first.t.calls;
    const creates = () => calls.filter((c) => c.method === 'createSandbox').length;
    assert.equal(creates(), 1, 'the session made its default sandbox');
    await first.http.close();

    // A new listener over the same engine: the client's next request names its old session.
    const second = setup(first.t, { maxSessionsPerTenant: 4 });
    target = second.fetchApp;
    const again = (await client.callTool({ name: 'code_run', arguments: { code: 'x' } })) as CallToolResult;
    assert.notEqual(again.isError, true, JSON.stringify(again.content));
    assert.equal(creates(), 1, 'the resumed session found its default sandbox, no new one');
    assert.deepEqual(second.attached, [sid], 'the engine session is re-attached under the same id');
    assert.ok(
      new Set(calls.filter((c) => c.method === 'runCode').map((c) => c.args[0])).size === 1,
      'both calls ran in one sandbox',
    );
    assert.equal(calls.filter((c) => c.method === 'runCode').length, 2);
    await client.close();
    await second.http.close();
    await first.t.close();
  });

  it('an unknown session id with no live default sandbox is a 404', async () => {
    const { t, http, fetchApp } = setup();
    const res = await fetchApp('http://127.0.0.1:7777/mcp', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${A}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': '0b6a3b43-2f4e-4a39-9d7e-2b0c8d9f3a11',
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(res.status, 404);
    await http.close();
    await t.close();
  });
});
