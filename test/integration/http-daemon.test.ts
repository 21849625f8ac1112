/**
 * The TCP listener end to end over the real engine: started in-process on 127.0.0.1:0 with a token file
 * of two tenants; REST through fetch, /openapi.json, /metrics, the edge guards, tenant isolation, and
 * the official MCP SDK client over Streamable HTTP in both protocol eras.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { DEFAULT_LABEL } from '../../src/protocol/mcp/default-sandbox.ts';
import { type Listener, startListener } from '../../src/transports/http-listener.ts';
import { withBulk } from '../helpers/mcp-result.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import { waitFor } from '../helpers/wait-for.ts';

const skip = nativeUnavailable();
const TOKEN_A = 'tok-alice-5f1c9e2d7a8b4c3e9f0a1b2c';
const TOKEN_B = 'tok-bob-8e7d6c5b4a39281706f5e4d3';
const text = (r: CallToolResult): string => (r.content[0]?.type === 'text' ? r.content[0].text : '');

describe('forkbox serve --listen: HTTP daemon over the real engine', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let listener: Listener;
  let base: string;
  const clients: Client[] = [];

  const call = async (method: string, path: string, token?: string, body?: unknown, headers = {}) => {
    const r = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const t = await r.text();
    let json: unknown;
    try {
      json = JSON.parse(t);
    } catch {
      json = undefined;
    }
    return { status: r.status, headers: r.headers, text: t, json: json as Record<string, unknown> };
  };

  async function mcpClient(token: string, versionNegotiation?: { mode: 'auto' | { pin: string } }) {
    const client = new Client(
      { name: 'http-daemon-test', version: '1' },
      versionNegotiation ? { versionNegotiation } : {},
    );
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      authProvider: { token: async () => token },
    });
    await client.connect(transport);
    clients.push(client);
    return { client, transport };
  }

  before(async () => {
    fx = await openNative();
    const tokenFile = join(fx.stateDir, 'tokens');
    writeFileSync(tokenFile, `# two tenants\n${TOKEN_A} alice\n${TOKEN_B} bob\n`, { mode: 0o600 });
    listener = await startListener({
      engine: fx.opened.engine,
      version: 'test',
      host: '127.0.0.1',
      port: 0,
      tokenFile,
      stateDir: fx.stateDir,
      mcp: { sessionIdleMs: 60_000 },
    });
    base = listener.server.url;
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await listener?.close(2000);
    // The fixture's close lists the default tenant only: end the tenants' sandboxes here.
    for (const tenant of ['alice', 'bob']) {
      const api = fx?.opened.engine.scoped({ tenant });
      for (const s of (await api?.listSandboxes()) ?? []) await api?.killSandbox(s.id).catch(() => undefined);
    }
    await fx?.close();
  });

  let aliceBox = '';

  it('REST: create, exec and kill through fetch; no token is 401; a foreign Origin is 403', async () => {
    const c = await call('POST', '/v1/sandboxes', TOKEN_A, { name: 'rest-box' });
    assert.equal(c.status, 201, c.text);
    aliceBox = c.json.id as string;
    const e = await call('POST', `/v1/sandboxes/${aliceBox}/exec`, TOKEN_A, {
      argv: ['python3', '-c', 'print(6*7)'],
    });
    assert.equal(e.status, 200, e.text);
    assert.equal(e.json.stdout, '42\n');
    assert.equal(e.json.exitCode, 0);

    const none = await call('GET', '/v1/sandboxes');
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer/);
    const foreign = await call('GET', '/v1/sandboxes', TOKEN_A, undefined, { origin: 'http://evil.example' });
    assert.equal(foreign.status, 403);
    assert.equal((foreign.json.error as { code: string }).code, 'permission_denied');
  });

  it("tenant B neither sees nor touches tenant A's sandbox (404)", async () => {
    const list = await call('GET', '/v1/sandboxes', TOKEN_B);
    assert.equal(list.status, 200);
    assert.ok(!(list.json as unknown as { id: string }[]).some((s) => s.id === aliceBox));
    assert.equal((await call('GET', `/v1/sandboxes/${aliceBox}`, TOKEN_B)).status, 404);
    assert.equal((await call('POST', `/v1/sandboxes/${aliceBox}/exec`, TOKEN_B, { cmd: 'id' })).status, 404);
    assert.equal((await call('DELETE', `/v1/sandboxes/${aliceBox}`, TOKEN_B)).status, 404);
    assert.equal((await call('GET', `/v1/sandboxes/${aliceBox}`, TOKEN_A)).json.state, 'running');
  });

  it('/openapi.json lists the routes; /metrics shows the counters moving', async () => {
    const doc = await call('GET', '/openapi.json');
    assert.equal(doc.status, 200);
    const paths = doc.json.paths as Record<string, Record<string, unknown>>;
    for (const p of [
      '/v1/sandboxes',
      '/v1/sandboxes/{id}',
      '/v1/sandboxes/{id}/exec',
      '/v1/sandboxes/{id}/files/content',
    ])
      assert.ok(paths[p], p);

    const metric = (body: string, re: RegExp) => Number(re.exec(body)?.[1] ?? 0);
    const before = (await call('GET', '/metrics', TOKEN_A)).text;
    const execs0 = metric(before, /forkbox_execs_total\{kind="exec"\} (\d+)/);
    assert.ok(execs0 >= 1);
    assert.equal(metric(before, /forkbox_sandboxes\{state="running"\} (\d+)/), 1);
    await call('POST', `/v1/sandboxes/${aliceBox}/exec`, TOKEN_A, { cmd: 'true' });
    const k = await call('DELETE', `/v1/sandboxes/${aliceBox}`, TOKEN_A);
    assert.equal(k.json.state, 'killed');
    const afterText = (await call('GET', '/metrics', TOKEN_A)).text;
    assert.equal(metric(afterText, /forkbox_execs_total\{kind="exec"\} (\d+)/), execs0 + 1);
    assert.equal(metric(afterText, /forkbox_sandboxes\{state="running"\} (\d+)/), 0);
    assert.ok(metric(afterText, /forkbox_sandbox_creates_total (\d+)/) >= 1);
    assert.ok(metric(afterText, /forkbox_errors_total\{code="not_found"\} (\d+)/) >= 3);
    assert.match(afterText, /forkbox_exec_duration_seconds_count\{kind="exec"\} \d+/);
    assert.match(
      afterText,
      /forkbox_http_requests_total\{method="DELETE",route="\/v1\/sandboxes\/:id",status="404"\} 1/,
    );
  });

  it('MCP, legacy era (the client default): a session with its own default sandbox, ended by DELETE', async () => {
    const { client, transport } = await mcpClient(TOKEN_A);
    assert.equal(client.getProtocolEra(), 'legacy');
    assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
    assert.ok(transport.sessionId, 'a legacy session id was assigned');
    const tools = await client.listTools();
    assert.ok(tools.tools.some((t) => t.name === 'exec_run'));
    const r = (await client.callTool({
      name: 'exec_run',
      arguments: { command: "python3 -c 'print(6*7)'" },
    })) as CallToolResult;
    assert.notEqual(r.isError, true, text(r));
    assert.equal(withBulk(r).stdout, '42\n');
    const alice = fx.opened.engine.scoped({ tenant: 'alice' });
    const defaults = await alice.listSandboxes({ labels: { [DEFAULT_LABEL]: 'true' } });
    assert.equal(defaults.length, 1);
    assert.equal(defaults[0]?.persistent, false, 'tied to the MCP session');

    // Another tenant presenting this session id is told it does not exist.
    const hijack = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TOKEN_B}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': transport.sessionId as string,
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    assert.equal(hijack.status, 404);
    await hijack.body?.cancel();

    await transport.terminateSession();
    await waitFor(async () => (await alice.getSandbox(defaults[0]?.id as string)).state === 'killed', {
      what: 'the session default sandbox ends with the session',
      timeoutMs: 15_000,
      intervalMs: 200,
    });
  });

  for (const mode of [{ pin: '2026-07-28' }, 'auto'] as const) {
    it(`MCP, modern era (${JSON.stringify(mode)}): stateless, default sandbox per token`, async () => {
      const { client, transport } = await mcpClient(TOKEN_B, { mode });
      assert.equal(client.getProtocolEra(), 'modern');
      assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
      assert.equal(transport.sessionId, undefined, 'no protocol session in 2026-07-28');
      const tools = await client.listTools();
      assert.ok(tools.tools.some((t) => t.name === 'exec_run'));
      const r = (await client.callTool({
        name: 'exec_run',
        arguments: { command: "python3 -c 'print(6*7)'" },
      })) as CallToolResult;
      assert.notEqual(r.isError, true, text(r));
      assert.equal(withBulk(r).stdout, '42\n');
      const bob = fx.opened.engine.scoped({ tenant: 'bob' });
      const defaults = await bob.listSandboxes({ labels: { [DEFAULT_LABEL]: 'true' } });
      assert.equal(
        defaults.length,
        1,
        'one default sandbox for the token, reused across requests and clients',
      );
      // Bob's tools cannot reach alice's sandboxes either.
      const a = await fx.opened.engine.scoped({ tenant: 'alice' }).createSandbox({ name: 'alice-only' });
      const denied = (await client.callTool({
        name: 'exec_run',
        arguments: { sandbox: a.id, command: 'id' },
      })) as CallToolResult;
      assert.equal(denied.isError, true);
      assert.match(text(denied), /not_found/);
      await fx.opened.engine.scoped({ tenant: 'alice' }).killSandbox(a.id);
    });
  }

  it('writes an audit log without secrets', () => {
    const log = readFileSync(join(fx.stateDir, 'audit.log'), 'utf8');
    const lines = log
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(lines.some((l) => l.tenant === 'alice' && l.route === 'POST /v1/sandboxes/:id/exec'));
    assert.ok(lines.some((l) => l.route === '/mcp' && l.tool === 'exec_run' && l.outcome === 'ok'));
    assert.ok(lines.some((l) => l.tenant === 'bob' && l.outcome === 'not_found'));
    for (const secret of [TOKEN_A, TOKEN_B, 'print(6*7)']) assert.ok(!log.includes(secret), secret);
  });
});
