/**
 * Template configs on every surface, over the real engine (fake runtime): local REST routes (define/list/delete), the TCP
 * listener (list open, define/delete admin-only), the daemon client, the CLI and the MCP tools' wiring.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CliContext } from '../../src/cli/context.ts';
import { buildProgram } from '../../src/cli/main.ts';
import { createOutput } from '../../src/cli/output/output.ts';
import { memoryAuditLog } from '../../src/protocol/audit.ts';
import { createHttpApp } from '../../src/protocol/http/app.ts';
import { guardConfig } from '../../src/protocol/http/guards.ts';
import { CANONICAL_TOOLS } from '../../src/protocol/mcp/tools/index.ts';
import { createLocalApp } from '../../src/protocol/rest/local-app.ts';
import { createDaemonClient, type DaemonClient } from '../../src/transports/daemon-client.ts';
import { serveUnix, type UnixServer } from '../../src/transports/unix-server.ts';
import { createTestEngine, type RecordedApi } from '../helpers/test-engine.ts';

describe('template routes on the local socket app', () => {
  const api = createTestEngine().api;
  const app = createLocalApp(api, { version: 't' });
  const json = (method: string, path: string, body?: unknown) =>
    app.request(path, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it('defines, lists and deletes; validates the body', async () => {
    const d = await json('POST', '/v1/templates', { name: 'warm', prewarm: ['json', 'sqlite3'] });
    assert.equal(d.status, 201);
    assert.deepEqual(api.calls.at(-1), {
      method: 'defineTemplate',
      args: [{ name: 'warm', prewarm: ['json', 'sqlite3'] }],
    });
    const l = (await (await json('GET', '/v1/templates')).json()) as { name: string }[];
    assert.deepEqual(
      l.map((t) => t.name),
      ['default', 'warm'],
    );
    assert.equal((await json('POST', '/v1/templates', { name: 'bad/name' })).status, 400);
    assert.equal((await json('POST', '/v1/templates', { name: 'x', extra: 1 })).status, 400);
    assert.equal((await json('POST', '/v1/templates', { name: 'x', prewarm: 'json' })).status, 400);
    const tooMany = Array.from({ length: 65 }, (_, i) => `m${i}`);
    assert.equal((await json('POST', '/v1/templates', { name: 'x', prewarm: tooMany })).status, 400);
    const del = await json('DELETE', '/v1/templates/warm');
    assert.deepEqual(await del.json(), { deleted: 'warm' });
    assert.equal((await json('DELETE', '/v1/templates/warm')).status, 404);
  });

  it('passes template on sandbox creation', async () => {
    assert.equal((await json('POST', '/v1/templates', { name: 'warm', prewarm: ['json'] })).status, 201);
    const c = await json('POST', '/v1/sandboxes', { template: 'warm', name: 'w' });
    assert.equal(c.status, 201);
    assert.deepEqual(api.calls.at(-1), { method: 'createSandbox', args: [{ template: 'warm', name: 'w' }] });
    assert.equal((await json('POST', '/v1/sandboxes', { template: '../x' })).status, 400);
  });
});

describe('template routes on the TCP listener', () => {
  it('lists for every caller; define and delete are refused (host administration)', async () => {
    const t = createTestEngine();
    const apis = new Map<string, RecordedApi>();
    const engine = {
      scoped(ctx: { tenant: string }) {
        const a = t.scoped(ctx);
        apis.set(ctx.tenant, a);
        return a;
      },
      attachSession: () => () => undefined,
    };
    const guard = guardConfig({ listenHost: '127.0.0.1', port: 7777 });
    const http = createHttpApp({ engine, version: '1', guard: () => guard, audit: memoryAuditLog() });
    const req = async (method: string, path: string, body?: unknown) => {
      const r = await http.app.request(path, {
        method,
        headers: { host: '127.0.0.1:7777', 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: r.status, body: (await r.json()) as { error?: { code: string } } };
    };
    assert.equal((await req('GET', '/v1/templates')).status, 200);
    const d = await req('POST', '/v1/templates', { name: 'warm' });
    assert.equal(d.status, 403);
    assert.equal(d.body.error?.code, 'permission_denied');
    assert.equal((await req('DELETE', '/v1/templates/warm')).status, 403);
    assert.ok(![...apis.values()].some((a) => a.calls.some((c) => c.method === 'defineTemplate')));
    const doc = (await req('GET', '/openapi.json')).body as unknown as { paths: Record<string, object> };
    assert.deepEqual(Object.keys(doc.paths['/v1/templates'] ?? {}), ['get'], 'only list is documented');
  });
});

describe('template methods of the daemon client', () => {
  let dir: string;
  let server: UnixServer;
  let client: DaemonClient;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fbx-tpl-'));
    server = await serveUnix(
      createLocalApp(createTestEngine().api, { version: 't' }),
      join(dir, 'forkbox.sock'),
    );
    client = createDaemonClient({ socketPath: join(dir, 'forkbox.sock') });
  });
  after(async () => {
    client.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('round-trips define, list and delete', async () => {
    const t = await client.defineTemplate({ name: 'w.1', image: 'debian', prewarm: ['decimal'] });
    assert.deepEqual(t.prewarm, ['decimal']);
    assert.deepEqual(
      (await client.listTemplates()).map((x) => [x.name, x.builtin]),
      [
        ['default', true],
        ['w.1', false],
      ],
    );
    assert.deepEqual(await client.deleteTemplate('w.1'), { deleted: 'w.1' });
    await assert.rejects(client.deleteTemplate('w.1'), /no template/);
  });
});

describe('forkbox templates / create --template', () => {
  async function runCli(args: string[], api: RecordedApi) {
    const stdout: string[] = [];
    const io = { stdout: { write: (s: string) => stdout.push(s) }, stderr: { write: () => true } };
    let code = 0;
    const ctx: CliContext = {
      globals: () => ({ stateDir: '/x', json: program.opts<{ json?: boolean }>().json === true }),
      out: () => createOutput(ctx.globals().json, io),
      api: async () => api,
      setExitCode: (c) => {
        code = c;
      },
    };
    const program = await buildProgram(ctx);
    try {
      await program.parseAsync(['node', 'forkbox', ...args]);
    } catch (e) {
      code = createOutput(false, io).error(e);
    }
    return { code, stdout: stdout.join('') };
  }

  it('define (comma lists, repeated), ls, rm, create --template', async () => {
    const api = createTestEngine().api;
    const d = await runCli(
      ['templates', 'define', 'warm', '--prewarm', 'json, sqlite3', '--prewarm', 'decimal'],
      api,
    );
    assert.equal(d.code, 0);
    assert.equal(d.stdout.trim(), 'warm');
    assert.deepEqual(api.calls.at(-1), {
      method: 'defineTemplate',
      args: [{ name: 'warm', prewarm: ['json', 'sqlite3', 'decimal'] }],
    });
    const ls = await runCli(['templates', 'ls'], api);
    assert.match(ls.stdout, /default\s+debian\s+-\s+default\s+built-in/);
    assert.match(ls.stdout, /warm\s+debian\s+json,sqlite3,decimal/);
    await runCli(['create', '--template', 'warm', '--memory', '256m'], api);
    assert.deepEqual(api.calls.at(-1), {
      method: 'createSandbox',
      args: [{ memoryMb: 256, template: 'warm' }],
    });
    // A template in use is kept: kill its sandbox first.
    const inUse = await runCli(['templates', 'rm', 'warm'], api);
    assert.equal(inUse.code, 4, 'conflict exit code');
    for (const sb of await api.listSandboxes()) await api.killSandbox(sb.id);
    const rm = await runCli(['--json', 'templates', 'rm', 'warm'], api);
    assert.deepEqual(JSON.parse(rm.stdout), { deleted: 'warm' });
    assert.equal((await runCli(['templates', 'rm', 'warm'], api)).code, 3, 'not_found exit code');
  });
});

describe('template MCP tools', () => {
  it('are in the canonical toolset; sandbox_create takes a template', () => {
    const names = CANONICAL_TOOLS.map((t) => t.name);
    for (const n of ['template_list', 'template_define', 'template_delete']) assert.ok(names.includes(n), n);
    const create = CANONICAL_TOOLS.find((t) => t.name === 'sandbox_create');
    assert.ok(create?.input.shape.template, 'sandbox_create has a template argument');
    const define = CANONICAL_TOOLS.find((t) => t.name === 'template_define');
    assert.equal(define?.input.safeParse({ name: 'w', prewarm: ['a,b'] }).success, false);
    assert.equal(define?.input.safeParse({ name: 'w', prewarm: ['email.mime'] }).success, true);
  });
});
