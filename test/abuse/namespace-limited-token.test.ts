/**
 * Attack: a token limited to one namespace (`TOKEN team-a ns1` in the token file) reaches the objects of
 * another namespace of its own tenant. On the old main it listed the default namespace's snapshots,
 * deleted one with `?cascade=true` (killing the sandbox restored from it) and restored another into
 * namespace `default`; the console's audit page showed it every call of its tenant.
 * Precedent: issue #22 item 2; OWASP API1:2023 "Broken Object Level Authorization" (a scope narrower than
 * the tenant must hold on every route, not only on the ones that list sandboxes).
 * Contained when: every REST route, every canonical tool over /mcp and /sse and every tool of the five
 * compatibility toolsets that names a sandbox, exec or snapshot of namespace `default` answers
 * not_found (or permission_denied where the caller names the namespace itself); lists, metrics and
 * status show nothing of it; the console shows neither its sandboxes nor its audit lines; and every
 * object of `default` is as the wide token left it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { Listener } from '../../src/transports/http-listener.ts';
import { token } from '../helpers/attacks.ts';
import { consoleCookieAt } from '../helpers/console-login.ts';
import { type NativeFixture, nativeUnavailable, openNative } from '../helpers/native.ts';
import {
  CANONICAL_LISTS,
  canonicalToolsNaming,
  REST_LISTS,
  restRoutesNaming,
  type ToolCall,
  type Victim,
} from '../helpers/snoop-tables.ts';
import { startTenantListener } from '../helpers/tenant-listener.ts';
import { type TenantRest, tenantRest } from '../helpers/tenant-rest.ts';

const skip = nativeUnavailable();
const WIDE = `tok-wide-${token('w')}`;
const NS1 = `tok-ns1-${token('n')}`;
const SECRET = token('DEFAULT-NS-SECRET');

type McpLike = Pick<Client, 'callTool' | 'listTools' | 'close'>;

describe('abuse: a namespace-limited token ends at its namespaces', { skip: skip ?? false }, () => {
  let fx: NativeFixture;
  let listener: Listener;
  let base = '';
  let wide: TenantRest;
  let ns1: TenantRest;
  const v: Victim = { box: '', name: 'ns-secret', exec: '', bgExec: '', snap: '', snapName: 'ns-snap' };
  /** A sandbox restored from the victim's snapshot: a cascade delete of the snapshot would kill it. */
  let restored = '';
  let own = '';
  const clients: McpLike[] = [];

  const expectOk = async (who: TenantRest, method: string, path: string, body?: unknown, status = 200) => {
    const r = await who.call(method, path, body);
    assert.equal(r.status, status, `${method} ${path}: ${r.text}`);
    return r.json;
  };

  before(async () => {
    fx = await openNative();
    ({ listener, base } = await startTenantListener(fx, { 'team-a': WIDE, 'team-a ns1': NS1 }));
    wide = tenantRest(base, WIDE, 'wide');
    ns1 = tenantRest(base, NS1, 'ns1');
    v.box = await wide.create({ name: v.name });
    await expectOk(
      wide,
      'PUT',
      `/v1/sandboxes/${v.box}/files/content?path=/tmp/secret.txt`,
      Buffer.from(SECRET),
    );
    v.exec = (await expectOk(wide, 'POST', `/v1/sandboxes/${v.box}/exec`, { cmd: `echo ${SECRET}` }))
      .execId as string;
    v.bgExec = (
      await expectOk(
        wide,
        'POST',
        `/v1/sandboxes/${v.box}/execs`,
        { argv: ['sleep', '3600'], stdin: true },
        201,
      )
    ).id as string;
    await expectOk(wide, 'POST', `/v1/sandboxes/${v.box}/ports`, { port: 8000 });
    v.snap = (await expectOk(wide, 'POST', `/v1/sandboxes/${v.box}/snapshots`, { name: v.snapName }, 201))
      .id as string;
    const r = await expectOk(wide, 'POST', `/v1/snapshots/${v.snap}/restore`, { n: 1 }, 201);
    restored = ((r.children as { sandbox: { id: string } }[])[0] as { sandbox: { id: string } }).sandbox.id;
    own = await ns1.create({ name: 'mine' });
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await listener?.close(2000);
    const api = fx?.opened.engine.scoped({ tenant: 'team-a' });
    for (const s of (await api?.listSnapshots()) ?? []) await api?.deleteSnapshot(s.id, { cascade: true });
    for (const s of (await api?.listSandboxes({ namespace: '*' })) ?? [])
      await api?.killSandbox(s.id).catch(() => undefined);
    await fx?.close();
  });

  /** Everything of namespace `default` is as the wide token left it. */
  async function victimIntact(): Promise<void> {
    const box = await expectOk(wide, 'GET', `/v1/sandboxes/${v.box}`);
    assert.equal(box.state, 'running');
    assert.equal(box.namespace, 'default');
    const file = await wide.call('GET', `/v1/sandboxes/${v.box}/files/content?path=/tmp/secret.txt`);
    assert.equal(file.text, SECRET);
    const bg = await expectOk(wide, 'GET', `/v1/sandboxes/${v.box}/execs/${v.bgExec}`);
    assert.equal((bg.exec as { state: string }).state, 'running', 'its background exec still runs');
    assert.equal((await expectOk(wide, 'GET', `/v1/snapshots/${v.snap}`)).name, v.snapName);
    assert.equal((await expectOk(wide, 'GET', `/v1/sandboxes/${restored}`)).state, 'running');
    const all = await expectOk(wide, 'GET', '/v1/sandboxes?namespace=*');
    const inDefault = (all as unknown as { namespace: string }[]).filter((s) => s.namespace === 'default');
    assert.equal(inDefault.length, 2, `nothing new in namespace default: ${JSON.stringify(all)}`);
  }

  const refused = (what: string, status: number, text: string) => {
    assert.ok(!text.includes(SECRET), `${what} leaked the default namespace's data`);
    return { status, text, what };
  };
  const VICTIM_IDS = () => [v.box, v.snap, v.exec, v.bgExec, restored];
  const showsNone = (what: string, text: string) => {
    for (const x of VICTIM_IDS()) assert.ok(!text.includes(x), `${what} shows ${x}: ${text.slice(0, 500)}`);
  };

  it('REST: every route naming the default namespace’s objects answers not_found', async () => {
    const routes = restRoutesNaming(v, own, [v.box, `default/${v.name}`, v.name]);
    for (const [method, path, body] of routes) {
      const r = await ns1.call(method, path, body);
      const { text } = refused(`${method} ${path}`, r.status, r.text);
      assert.equal(r.status, 404, `ns1 ${method} ${path} → ${r.status} ${text}`);
      assert.equal((r.json.error as { code?: string } | undefined)?.code, 'not_found', text);
    }
    for (const list of [...REST_LISTS, '/v1/sandboxes?namespace=*', '/v1/sandboxes?namespace=default']) {
      const r = await ns1.call('GET', list);
      assert.equal(r.status, 200, r.text);
      showsNone(`ns1's ${list}`, r.text);
    }
    // Naming the namespace itself: refused, not quietly done elsewhere.
    const intruder = await ns1.call('POST', '/v1/sandboxes', { name: 'intruder', namespace: 'default' });
    assert.equal(intruder.status, 403, intruder.text);
    await victimIntact();
  });

  /** Calls each tool as the ns1 token and expects a refusal that says nothing of the victim. */
  async function expectRefused(client: McpLike, where: string, calls: readonly ToolCall[]): Promise<void> {
    for (const [name, args] of calls) {
      const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
      const text = r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
      refused(`${where} ${name}`, 0, text);
      assert.equal(r.isError, true, `${where} ${name} ${JSON.stringify(args)} succeeded: ${text}`);
      assert.match(
        text,
        /not_found|not found|no sandbox|no snapshot|permission_denied|may act only in/i,
        `${where} ${name} ${JSON.stringify(args)}: ${text}`,
      );
    }
  }
  async function expectNoneListed(client: McpLike, where: string, calls: readonly ToolCall[]): Promise<void> {
    for (const [name, args] of calls) {
      const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
      const text = JSON.stringify([r.structuredContent, r.content]);
      assert.notEqual(r.isError, true, `${where} ${name}: ${text}`);
      showsNone(`${where} ${name}`, text);
    }
  }

  async function streamable(path: string): Promise<Client> {
    const c = new Client({ name: 'ns1-snooper', version: '1' });
    await c.connect(
      new StreamableHTTPClientTransport(new URL(`${base}${path}`), {
        authProvider: { token: async () => NS1 },
      }),
    );
    clients.push(c);
    return c;
  }

  it('MCP: the canonical tools over /mcp and over /sse answer not_found', async () => {
    const headers = { authorization: `Bearer ${NS1}` };
    const { Client: V1Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const sse = new V1Client({ name: 'ns1-sse', version: '1' });
    await sse.connect(
      new SSEClientTransport(new URL(`${base}/sse`), {
        requestInit: { headers },
        eventSourceInit: {
          fetch: (url, init) => fetch(url, { ...init, headers: { ...init?.headers, ...headers } }),
        },
      }),
    );
    clients.push(sse as unknown as McpLike);
    for (const [where, client] of [
      ['/mcp', await streamable('/mcp')],
      ['/sse', sse as unknown as McpLike],
    ] as const) {
      for (const ref of [v.box, `default/${v.name}`])
        await expectRefused(client, where, canonicalToolsNaming(v, own, ref));
      await expectNoneListed(client, where, CANONICAL_LISTS);
    }
    await victimIntact();
  });

  /**
   * Each compatibility toolset's tools, every one classified: those that name a sandbox, exec or
   * snapshot (called with the victim's, refused), those that list or count (called, showing none of
   * it), and those that name nothing of anyone's (create the caller's own, or host-wide and refused on
   * their own grounds). A tool missing from the table fails the test, so a new tool is walked too.
   */
  function compatTables(): Record<string, { naming: ToolCall[]; lists: ToolCall[]; none: string[] }> {
    const devExec = (exec: string) => `e_${v.box}.${exec}`;
    const input = (a: Record<string, unknown>) => ({ input_data: a });
    return {
      forkd: {
        naming: [
          ['get_sandbox', { sandbox_id: v.box }],
          ['kill_sandbox', { sandbox_id: v.box }],
          ['exec_command', { sandbox_id: v.box, args: ['id'] }],
          ['eval_code', { sandbox_id: v.box, code: '1' }],
          ['ping_sandbox', { sandbox_id: v.box }],
          ['wait_for_text', { sandbox_id: v.box, path: '/tmp/secret.txt', marker: 'x', timeout_secs: 0 }],
          ['branch_sandbox', { sandbox_id: v.box, tag: 'stolen-branch' }],
          ['spawn_sandboxes', { snapshot_tag: v.snapName, n: 1 }],
          ['spawn_sandboxes', { snapshot_tag: v.snap, n: 1 }],
        ],
        lists: [
          ['list_sandboxes', {}],
          ['list_snapshots', {}],
        ],
        none: ['create_snapshot'],
      },
      podflare: {
        naming: [
          ['run_python', { code: '1', sandbox_id: v.box }],
          ['run_bash', { code: 'id', sandbox_id: v.box }],
          ['fork', { n: 1, sandbox_id: v.box }],
          ['diff', { other_id: v.box, sandbox_id: own }],
          ['diff', { other_id: own, sandbox_id: v.box }],
          ['merge_into', { winner: v.box, sandbox_id: own }],
          ['merge_into', { winner: own, sandbox_id: v.box }],
          ['upload', { path: '/tmp/secret.txt', content: 'eA==', sandbox_id: v.box }],
          ['download', { path: '/tmp/secret.txt', sandbox_id: v.box }],
        ],
        lists: [],
        none: [],
      },
      agentkernel: {
        naming: [
          ['sandbox_exec', { name: v.box, command: ['id'] }],
          ['sandbox_remove', { name: v.box }],
          ['sandbox_start', { name: v.box }],
          ['sandbox_stop', { name: v.box }],
          ['sandbox_file_write', { name: v.box, path: '/tmp/secret.txt', content: 'x' }],
          ['sandbox_file_read', { name: v.box, path: '/tmp/secret.txt' }],
          ['sandbox_extend_ttl', { name: v.box, by: '1h' }],
          ['snapshot_take', { sandbox: v.box, name: 'stolen-take' }],
          ['snapshot_get', { name: v.snapName }],
          ['snapshot_delete', { name: v.snapName }],
          ['snapshot_restore', { name: v.snapName, as_name: 'stolen-restore' }],
          ['browser_open', { name: v.box, url: 'http://127.0.0.1:8000/' }],
          ['browser_snapshot', { name: v.box }],
          ['browser_click', { name: v.box, selector: 'a' }],
          ['browser_fill', { name: v.box, selector: 'input', value: 'x' }],
          ['browser_close', { name: v.box }],
          ['browser_events', { name: v.box }],
        ],
        lists: [
          ['sandbox_list', {}],
          ['snapshot_list', {}],
        ],
        none: ['sandbox_run', 'sandbox_create'],
      },
      devbench: {
        naming: [
          ['attach', input({ target: v.box, client_name: 'x', session_id: 'x' })],
          ['kill', input({ container_id: v.box })],
          ['exec_start', input({ container_id: v.box, cmd: ['id'] })],
          ['exec_poll', input({ exec_id: devExec(v.exec) })],
          ['exec_cancel', input({ exec_id: devExec(v.bgExec) })],
          ['fs_read', input({ container_id: v.box, path: '/workspace/x' })],
          ['fs_write', input({ container_id: v.box, path: '/workspace/x', content: 'x' })],
          ['fs_delete', input({ container_id: v.box, path: '/workspace/x' })],
          ['fs_stat', input({ container_id: v.box, path: '/workspace/x' })],
          ['fs_list', input({ container_id: v.box, path: '/workspace' })],
        ],
        lists: [
          ['list_containers', {}],
          ['list_execs', {}],
          ['metrics', {}],
          ['system_status', {}],
          ['reconcile', {}],
        ],
        none: ['health', 'spawn', 'garbage_collect'],
      },
      microsandbox: {
        naming: [
          ['sandbox_start', { sandbox: v.name, namespace: 'default' }],
          ['sandbox_stop', { sandbox: v.name, namespace: 'default' }],
          ['sandbox_run_code', { sandbox: v.name, namespace: 'default', code: '1', language: 'python' }],
          ['sandbox_run_command', { sandbox: v.name, namespace: 'default', command: 'id' }],
        ],
        lists: [
          ['sandbox_get_metrics', { sandbox: v.name, namespace: 'default' }],
          ['sandbox_get_metrics', { namespace: '*' }],
        ],
        none: [],
      },
    };
  }

  it('MCP: every tool of the five compatibility toolsets that names the default namespace’s objects refuses', async () => {
    for (const [toolset, table] of Object.entries(compatTables())) {
      const client = await streamable(`/mcp/${toolset}`);
      const listed = (await client.listTools()).tools.map((t) => t.name);
      const covered = new Set([...table.naming, ...table.lists].map(([n]) => n).concat(table.none));
      assert.deepEqual(
        listed.filter((n) => !covered.has(n)),
        [],
        `${toolset}: tools this test does not walk`,
      );
      await expectRefused(client, `/mcp/${toolset}`, table.naming);
      await expectNoneListed(client, `/mcp/${toolset}`, table.lists);
    }
    await victimIntact();
  });

  it('the console shows the namespace-limited token neither the sandboxes nor the audit lines of default', async () => {
    const cookie = await consoleCookieAt(base, NS1);
    const get = async (path: string) => {
      const r = await fetch(`${base}/console${path}`, { headers: { cookie, origin: base } });
      return { status: r.status, text: await r.text() };
    };
    const dash = await get('');
    assert.equal(dash.status, 200);
    assert.ok(dash.text.includes(own), 'its own sandbox is on the dashboard');
    showsNone('the dashboard', dash.text);
    for (const path of [`/sandboxes/${v.box}`, `/sandboxes/${v.box}/execs/${v.exec}`]) {
      const r = await get(path);
      assert.equal(r.status, 404, `${path} → ${r.status}`);
      refused(path, r.status, r.text);
    }
    const audit = await get('/audit');
    assert.equal(audit.status, 200);
    assert.ok(audit.text.includes(own), 'its own calls are on the audit page');
    // Its own snooping named the victim's ids (those lines are its own); only the wide token ever named
    // the restored sandbox (victimIntact reads it after every test).
    assert.ok(!audit.text.includes(restored), "the audit page shows the wide token's calls");
    await victimIntact();
  });
});
