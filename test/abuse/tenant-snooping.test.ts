/**
 * Attack: tenant snooping over the HTTP listener — tenant B, with a valid token of its own, names tenant
 * A's sandbox (by id and by name), execs, snapshots and files in every REST route and every MCP tool: get,
 * list, exec, background exec poll/stdin/cancel, code, files, fork, merge, diff, pause, resume, extend,
 * kill, snapshots (create, get, restore, delete, list).
 * Precedent: peers 6b (multi-tenant isolation of a sandbox service's API); OWASP API1:2023 "Broken Object
 * Level Authorization" (an object id from another tenant must not be honoured).
 * Contained when: every such call answers "not found" (404 / not_found: B cannot even learn that A's
 * objects exist), lists show B nothing of A's, B may reuse A's names for its own objects, and A's sandbox,
 * files, running exec and snapshot are exactly as A left them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { Listener } from '../../src/transports/http-listener.ts';
import { token } from '../helpers/attacks.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import {
  CANONICAL_LISTS,
  canonicalToolsNaming,
  REST_LISTS,
  restRoutesNaming,
} from '../helpers/snoop-tables.ts';
import { startTenantListener } from '../helpers/tenant-listener.ts';
import { tenantRest } from '../helpers/tenant-rest.ts';

const skip = nativeUnavailable();
const TOKEN_A = `tok-alice-${token('a')}`;
const TOKEN_B = `tok-bob-${token('b')}`;
const SECRET = token('ALICE-SECRET');

describe('abuse: tenant snooping over REST and MCP', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let listener: Listener;
  let base: string;
  let mcp: Client | undefined;
  const alice = { box: '', name: 'alice-secret', exec: '', bgExec: '', snap: '', snapName: 'alice-snap' };
  let bobBox = '';

  /** One call with token `tok` (a Buffer body goes as raw bytes). */
  const call = (tok: string, method: string, path: string, body?: unknown) =>
    tenantRest(base, tok, tok === TOKEN_A ? 'alice' : 'bob').call(method, path, body);
  const asA = async (method: string, path: string, body?: unknown, status = 200) => {
    const r = await call(TOKEN_A, method, path, body);
    assert.equal(r.status, status, `alice ${method} ${path}: ${r.text}`);
    return r.json;
  };

  before(async () => {
    fx = await openNative();
    ({ listener, base } = await startTenantListener(
      fx,
      { alice: TOKEN_A, bob: TOKEN_B },
      { mcp: { sessionIdleMs: 60_000 } },
    ));
    alice.box = (await asA('POST', '/v1/sandboxes', { name: alice.name }, 201)).id as string;
    await asA('PUT', `/v1/sandboxes/${alice.box}/files/content?path=/tmp/secret.txt`, Buffer.from(SECRET));
    alice.exec = (await asA('POST', `/v1/sandboxes/${alice.box}/exec`, { cmd: `echo ${SECRET}` }))
      .execId as string;
    alice.bgExec = (
      await asA('POST', `/v1/sandboxes/${alice.box}/execs`, { argv: ['sleep', '3600'], stdin: true }, 201)
    ).id as string;
    alice.snap = (await asA('POST', `/v1/sandboxes/${alice.box}/snapshots`, { name: alice.snapName }, 201))
      .id as string;
    const bob = await call(TOKEN_B, 'POST', '/v1/sandboxes', { name: 'bob-box' });
    assert.equal(bob.status, 201, bob.text);
    bobBox = bob.json.id as string;
  });
  after(async () => {
    await mcp?.close().catch(() => undefined);
    await listener?.close(2000);
    for (const tenant of ['alice', 'bob']) {
      const api = fx?.opened.engine.scoped({ tenant });
      for (const s of (await api?.listSnapshots()) ?? []) await api?.deleteSnapshot(s.id, { cascade: true });
      for (const s of (await api?.listSandboxes()) ?? []) await api?.killSandbox(s.id).catch(() => undefined);
    }
    await fx?.close();
  });

  /** Alice's objects are exactly as she left them. */
  async function aliceIntact(): Promise<void> {
    const box = await asA('GET', `/v1/sandboxes/${alice.box}`);
    assert.equal(box.state, 'running');
    assert.equal(box.name, alice.name);
    const file = await call(TOKEN_A, 'GET', `/v1/sandboxes/${alice.box}/files/content?path=/tmp/secret.txt`);
    assert.equal(file.text, SECRET);
    const bg = await asA('GET', `/v1/sandboxes/${alice.box}/execs/${alice.bgExec}`);
    assert.equal((bg.exec as { state: string }).state, 'running', 'her background exec still runs');
    assert.equal((await asA('GET', `/v1/snapshots/${alice.snap}`)).name, alice.snapName);
  }

  it('REST: every route naming alice’s objects answers 404 to bob', async () => {
    const routes = restRoutesNaming(alice, bobBox, [alice.box, alice.name]);
    for (const [method, path, body] of routes) {
      const r = await call(TOKEN_B, method, path, body);
      assert.equal(r.status, 404, `bob ${method} ${path} → ${r.status} ${r.text}`);
      assert.equal((r.json.error as { code?: string } | undefined)?.code, 'not_found', r.text);
      assert.ok(!r.text.includes(SECRET), `bob ${method} ${path} leaked alice's data`);
    }
    for (const list of REST_LISTS) {
      const r = await call(TOKEN_B, 'GET', list);
      assert.equal(r.status, 200);
      for (const x of [alice.box, alice.name, alice.snap, alice.snapName])
        assert.ok(!r.text.includes(x), `bob's ${list} shows ${x}`);
    }
    await aliceIntact();
  });

  it('REST: bob may reuse alice’s names, and gets his own objects', async () => {
    const mine = await call(TOKEN_B, 'POST', '/v1/sandboxes', { name: alice.name });
    assert.equal(mine.status, 201, mine.text);
    assert.notEqual(mine.json.id, alice.box);
    const snap = await call(TOKEN_B, 'POST', `/v1/sandboxes/${mine.json.id}/snapshots`, {
      name: alice.snapName,
    });
    assert.equal(snap.status, 201, snap.text);
    assert.notEqual(snap.json.id, alice.snap);
    const read = await call(TOKEN_B, 'GET', `/v1/sandboxes/${alice.name}/files/content?path=/tmp/secret.txt`);
    assert.equal(read.status, 404, 'the name resolves to bob’s own sandbox, which has no such file');
    await aliceIntact();
  });

  it('MCP: every tool naming alice’s objects answers not_found to bob', async () => {
    mcp = new Client({ name: 'snooper', version: '1' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
        authProvider: { token: async () => TOKEN_B },
      }),
    );
    // By id (her name now also names bob's own sandbox: see the test above).
    const calls = canonicalToolsNaming(alice, bobBox, alice.box);
    for (const [name, args] of calls) {
      const r = (await mcp.callTool({ name, arguments: args })) as CallToolResult;
      const text = r.content[0]?.type === 'text' ? r.content[0].text : '';
      assert.equal(r.isError, true, `bob's ${name} ${JSON.stringify(args)} succeeded: ${text}`);
      assert.match(text, /not_found/, `${name} ${JSON.stringify(args)}: ${text}`);
      assert.ok(!text.includes(SECRET), `${name} leaked alice's data`);
    }
    for (const [name, args] of CANONICAL_LISTS) {
      const r = (await mcp.callTool({ name, arguments: args })) as CallToolResult;
      const text = JSON.stringify(r.structuredContent);
      assert.notEqual(r.isError, true, text);
      for (const x of [alice.box, alice.snap]) assert.ok(!text.includes(x), `bob's ${name} shows ${x}`);
    }
    await aliceIntact();
  });
});
