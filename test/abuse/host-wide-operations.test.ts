/**
 * Attack: a tenant of the HTTP listener runs the host's own operations — DevBench's `garbage_collect`
 * (which ran forkbox's host-wide gc for any tenant token over HTTP), the admin REST routes (gc, df, image
 * build/import/pull/remove, template definitions), the canonical toolset's template tools — and reads the
 * host's state through `system_status` (the count of every tenant's templates).
 * Precedent: issue #22 item 3; OWASP API5:2023 "Broken Function Level Authorization" (an administrative
 * function reached with an ordinary user's credentials).
 * Contained when: each is refused to the tenant (permission_denied, an unknown route or tool) while the
 * host's own tenant may run them, and a tenant's status counts only its own templates.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { ForkboxError } from '../../src/domain/errors.ts';
import type { Listener } from '../../src/transports/http-listener.ts';
import { token } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import { startTenantListener } from '../helpers/tenant-listener.ts';
import { tenantRest } from '../helpers/tenant-rest.ts';

const skip = nativeUnavailable();
const TOKEN_HOST = `tok-host-${token('h')}`;
const TOKEN_A = `tok-alice-${token('a')}`;

describe('abuse: host-wide operations stay with the host', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let listener: Listener;
  let base: string;
  const clients: Client[] = [];

  async function mcpAs(tok: string, path: string): Promise<Client> {
    const c = new Client({ name: 'host-wide', version: '1' });
    await c.connect(
      new StreamableHTTPClientTransport(new URL(`${base}${path}`), {
        authProvider: { token: async () => tok },
      }),
    );
    clients.push(c);
    return c;
  }
  const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

  before(async () => {
    fx = await openNative();
    ({ listener, base } = await startTenantListener(fx, { default: TOKEN_HOST, alice: TOKEN_A }));
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await listener?.close(2000);
    for (const tenant of ['alice', 'default']) {
      const api = fx?.opened.engine.scoped({ tenant });
      for (const s of (await api?.listSandboxes()) ?? []) await api?.killSandbox(s.id).catch(() => undefined);
    }
    await fx?.close();
  });

  it("DevBench's garbage_collect is refused to a tenant and runs for the host", async () => {
    const alice = await mcpAs(TOKEN_A, '/mcp/devbench');
    const refused = (await alice.callTool({ name: 'garbage_collect', arguments: {} })) as CallToolResult;
    assert.equal(refused.isError, true, `alice ran the host's gc: ${text(refused)}`);
    assert.match(text(refused), /whole host.*permission_denied/s);
    const host = await mcpAs(TOKEN_HOST, '/mcp/devbench');
    const ran = (await host.callTool({ name: 'garbage_collect', arguments: {} })) as CallToolResult;
    assert.notEqual(ran.isError, true, text(ran));
    assert.equal(
      typeof (ran.structuredContent as { containers_removed?: unknown }).containers_removed,
      'number',
    );
  });

  it('the admin REST routes are not served to a tenant on the listener', async () => {
    const alice = tenantRest(base, TOKEN_A, 'alice');
    const routes: [string, string, unknown?][] = [
      ['POST', '/v1/gc', {}],
      ['GET', '/v1/df'],
      ['POST', '/v1/images/build', { name: 'stolen' }],
      ['POST', '/v1/images/import', { name: 'stolen', path: '/etc' }],
      ['POST', '/v1/images/pull', { ref: '127.0.0.1:1/x' }],
      ['DELETE', '/v1/images/debian'],
      ['POST', '/v1/templates', { name: 'stolen', image: 'debian' }],
      ['DELETE', '/v1/templates/stolen'],
    ];
    for (const [method, path, body] of routes) {
      const r = await alice.call(method, path, body);
      assert.ok([403, 404, 405].includes(r.status), `alice ${method} ${path} → ${r.status}`);
    }
  });

  it('template tools are neither listed nor callable for a tenant', async () => {
    const alice = await mcpAs(TOKEN_A, '/mcp');
    const names = (await alice.listTools()).tools.map((t) => t.name);
    for (const t of ['template_define', 'template_delete']) assert.ok(!names.includes(t), t);
    const r = (await alice
      .callTool({ name: 'template_define', arguments: { name: 'stolen', image: 'debian' } })
      .catch((e: Error) => ({
        isError: true,
        content: [{ type: 'text', text: e.message }],
      }))) as CallToolResult;
    assert.equal(r.isError, true, text(r));
  });

  it("the engine refuses every host-wide call to a tenant's context", async () => {
    const api = fx.opened.engine.scoped({ tenant: 'alice', remote: true });
    const calls: [string, () => Promise<unknown>][] = [
      ['gc', () => api.gc()],
      ['df', () => api.df()],
      ['buildImage', () => api.buildImage({ distro: 'debian', name: 'stolen' })],
      ['importImage', () => api.importImage('stolen', '/etc')],
      ['removeImage', () => api.removeImage('debian')],
      ['defineTemplate', () => api.defineTemplate({ name: 'stolen', image: 'debian' })],
      ['deleteTemplate', () => api.deleteTemplate('stolen')],
    ];
    for (const [name, call] of calls) {
      await assert.rejects(
        call(),
        (e: unknown) => e instanceof ForkboxError && e.code === 'permission_denied',
        `${name} for a tenant`,
      );
    }
    assert.ok(
      (await fx.opened.engine.scoped({ tenant: 'default' }).listImages()).some((i) => i.name === 'debian'),
    );
  });

  it("a tenant's status counts its own templates, not the host's or another tenant's", async () => {
    const host = tenantRest(base, TOKEN_HOST, 'host');
    await host.create();
    const hostStatus = await host.call('GET', '/v1/system');
    assert.ok((hostStatus.json.templates as number) >= 1, JSON.stringify(hostStatus.json));
    const alice = tenantRest(base, TOKEN_A, 'alice');
    const before = await alice.call('GET', '/v1/system');
    assert.equal(before.json.templates, 0, `alice sees the host's templates: ${JSON.stringify(before.json)}`);
    await alice.create();
    const after = await alice.call('GET', '/v1/system');
    assert.equal(after.json.templates, 1, JSON.stringify(after.json));
  });
});
