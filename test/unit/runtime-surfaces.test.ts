/**
 * A create's `runtime` on every surface, over the real engine (fake runtime with native and gvisor, or
 * native only): the MCP tool's argument and output (SDK client in memory); the REST body
 * (local socket app), its errors and the OpenAPI document (TCP listener); the CLI's --runtime on create
 * and run, and inspect.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { memoryAuditLog } from '../../src/protocol/audit.ts';
import { createHttpApp } from '../../src/protocol/http/app.ts';
import { guardConfig } from '../../src/protocol/http/guards.ts';
import { createDefaultSandbox, createForkboxMcpServer } from '../../src/protocol/mcp/server.ts';
import { createLocalApp } from '../../src/protocol/rest/local-app.ts';
import { runCliInProcess } from '../helpers/cli-in-process.ts';
import { createTestEngine, type TestEngine } from '../helpers/test-engine.ts';

const BOTH = { native: {}, gvisor: { forkProcesses: true } };

async function withMcp(t: TestEngine, fn: (c: Client) => Promise<void>): Promise<void> {
  const server = createForkboxMcpServer({ api: t.api, defaults: createDefaultSandbox(), version: '0' });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(ct);
  try {
    await fn(client);
  } finally {
    await client.close();
    await server.close();
    await t.close();
  }
}

const call = async (c: Client, name: string, args: Record<string, unknown>) =>
  (await c.callTool({ name, arguments: args })) as CallToolResult;
const text = (r: CallToolResult): string => (r.content[0]?.type === 'text' ? r.content[0].text : '');

describe('runtime over MCP', () => {
  it('sandbox_create takes runtime (an enum, described) and its output shows it', async () => {
    const t = createTestEngine({ runtimes: BOTH });
    await withMcp(t, async (c) => {
      const create = (await c.listTools()).tools.find((x) => x.name === 'sandbox_create');
      const arg = (
        create?.inputSchema.properties as Record<string, { enum?: string[]; description?: string }>
      )?.runtime;
      assert.deepEqual(arg?.enum, ['native', 'gvisor']);
      assert.match(
        arg?.description ?? '',
        /^native \(default: .*\) or gvisor \(forks carry every running process\)$/,
      );
      const r = await call(c, 'sandbox_create', { name: 'g', runtime: 'gvisor' });
      assert.equal(r.isError, undefined, text(r));
      assert.equal((r.structuredContent as { runtime: string }).runtime, 'gvisor');
      const createCall = t.api.calls.find((x) => x.method === 'createSandbox');
      assert.deepEqual(createCall?.args[0], { name: 'g', runtime: 'gvisor' });
      const got = await call(c, 'sandbox_get', { sandbox: 'g' });
      assert.equal((got.structuredContent as { runtime: string }).runtime, 'gvisor');
      const plain = await call(c, 'sandbox_create', {});
      assert.equal((plain.structuredContent as { runtime: string }).runtime, 'native');
    });
  });

  it('an unknown runtime is an invalid argument; a missing one says how to install it', async () => {
    const t = createTestEngine();
    await withMcp(t, async (c) => {
      const bad = await call(c, 'sandbox_create', { runtime: 'kata' });
      assert.equal(bad.isError, true);
      assert.match(text(bad), /`runtime`.*\[code: invalid_argument\]/);
      const missing = await call(c, 'sandbox_create', { runtime: 'gvisor' });
      assert.equal(missing.isError, true);
      assert.match(
        text(missing),
        /gvisor runtime needs runsc: run `npm run setup` as root.*\[code: unavailable\]/,
      );
    });
  });
});

describe('runtime over REST', () => {
  const setup = (runtimes?: typeof BOTH) => {
    const t = createTestEngine(runtimes ? { runtimes } : {});
    const app = createLocalApp(t.api, { version: 't' });
    const post = (body: unknown) =>
      app.request('/v1/sandboxes', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    return { t, app, post };
  };

  it('the create body takes runtime; the sandbox and /v1/system report it', async () => {
    const { t, app, post } = setup(BOTH);
    const r = await post({ name: 'g', runtime: 'gvisor' });
    assert.equal(r.status, 201);
    const sb = (await r.json()) as { runtime: string; capabilities: { forkProcesses?: boolean } };
    assert.equal(sb.runtime, 'gvisor');
    assert.equal(sb.capabilities.forkProcesses, true);
    assert.deepEqual(t.api.calls.at(-1), {
      method: 'createSandbox',
      args: [{ name: 'g', runtime: 'gvisor' }],
    });
    const got = (await (await app.request('/v1/sandboxes/g')).json()) as { runtime: string };
    assert.equal(got.runtime, 'gvisor');
    const sys = (await (await app.request('/v1/system')).json()) as { runtimes: string[] };
    assert.deepEqual(sys.runtimes, ['native', 'gvisor']);
    await t.close();
  });

  it('an unknown runtime is 400 invalid_argument; one the daemon lacks is 503 unavailable', async () => {
    const { t, post } = setup();
    const bad = await post({ runtime: 'kata' });
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { code: string } }).error.code, 'invalid_argument');
    const missing = await post({ runtime: 'gvisor' });
    assert.equal(missing.status, 503);
    const err = ((await missing.json()) as { error: { code: string; message: string } }).error;
    assert.equal(err.code, 'unavailable');
    assert.match(err.message, /needs runsc: run `npm run setup` as root/);
    await t.close();
  });

  it('the OpenAPI document lists runtime in the create body and in sandbox info', async () => {
    const t = createTestEngine();
    const guard = guardConfig({ listenHost: '127.0.0.1', port: 7777 });
    const engine = {
      scoped: (ctx: { tenant: string }) => t.scoped(ctx),
      attachSession: () => () => undefined,
    };
    const http = createHttpApp({ engine, version: '1', guard: () => guard, audit: memoryAuditLog() });
    const r = await http.app.request('/openapi.json', { headers: { host: '127.0.0.1:7777' } });
    type Schema = { properties?: Record<string, { enum?: string[] }> };
    const doc = (await r.json()) as {
      paths: Record<
        string,
        Record<
          string,
          {
            requestBody?: { content: Record<string, { schema: Schema }> };
            responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
          }
        >
      >;
    };
    const create = doc.paths['/v1/sandboxes']?.post;
    assert.deepEqual(create?.requestBody?.content['application/json']?.schema.properties?.runtime?.enum, [
      'native',
      'gvisor',
    ]);
    const out = create?.responses['201']?.content?.['application/json']?.schema;
    assert.deepEqual(out?.properties?.runtime?.enum, ['native', 'gvisor']);
    assert.ok(out?.properties?.capabilities, 'sandbox info documents its runtime capabilities');
    await t.close();
  });
});

const runCli = runCliInProcess;

describe('runtime in the CLI', () => {
  it('create --runtime and run --runtime pass it; inspect shows it', async () => {
    const t = createTestEngine({ runtimes: BOTH });
    const c = await runCli(['--json', 'create', '--name', 'g', '--runtime', 'gvisor'], t.api);
    assert.equal(c.code, 0, c.stderr);
    assert.deepEqual(t.api.calls.at(-1), {
      method: 'createSandbox',
      args: [{ name: 'g', runtime: 'gvisor' }],
    });
    assert.equal((JSON.parse(c.stdout) as { runtime: string }).runtime, 'gvisor');
    const i = await runCli(['inspect', 'g'], t.api);
    assert.match(i.stdout, /^runtime\s+gvisor$/m);
    const r = await runCli(['run', '--runtime', 'gvisor', '--no-stdin', '--', 'true'], t.api);
    assert.equal(r.code, 0, r.stderr);
    const runCreate = t.api.calls.filter((x) => x.method === 'createSandbox').at(-1);
    assert.equal((runCreate?.args[0] as { runtime?: string } | undefined)?.runtime, 'gvisor');
    await t.close();
  });

  it('--runtime with an unknown name is a usage error naming the choices', async () => {
    const t = createTestEngine();
    const r = await runCli(['create', '--runtime', 'kata'], t.api);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--runtime must be native or gvisor, not 'kata'/);
    assert.equal(t.api.calls.length, 0);
    await t.close();
  });
});
