/**
 * microsandbox's documented flow (its MCP page), run unchanged by the two kinds of client its users had,
 * against a real daemon with the native runtime: raw JSON-RPC POSTs to `/mcp/microsandbox` on the HTTP
 * listener (what `msb server` clients sent: no event-stream Accept, no session, a bearer token), and the
 * v1 TypeScript SDK over stdio (`forkbox mcp --toolset microsandbox`). Each: sandbox_start with ONE name
 * in two namespaces → sandbox_run_code python and nodejs, state kept per sandbox → sandbox_run_command →
 * sandbox_get_metrics with `*` (sees both) and with one namespace → sandbox_stop; the two prompts listed
 * and fetched; microsandbox's result texts and its `Error: …` convention.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { type ServedDaemon, startServe, stopServeAndClean } from '../helpers/daemon.ts';
import { forkboxMcpServer } from '../helpers/mcp-stdio.ts';
import { makeStateDir, nativeUnavailable } from '../helpers/native.ts';

const skip = nativeUnavailable();
const TOKEN = 'tok-msb-alice-4f0c2a9e7d1b3c58';

type Json = Record<string, unknown>;
interface Result {
  isError?: boolean;
  content: { type: string; text?: string }[];
}
interface Prompt {
  name: string;
  arguments?: { name: string; required?: boolean | undefined }[] | undefined;
}
/** What the flow needs of a client, whichever transport it speaks. */
interface MsbClient {
  call(name: string, args: Json): Promise<Result>;
  tools(): Promise<string[]>;
  prompts(): Promise<Prompt[]>;
  prompt(name: string, args: Record<string, string>): Promise<{ messages: { content: { text?: string } }[] }>;
}
interface Line {
  stream: string;
  text: string;
}

/** msb server's answer: one text block, the JSON of its internal result pretty-printed. */
async function value(c: MsbClient, name: string, args: Json): Promise<unknown> {
  const r = await c.call(name, args);
  assert.notEqual(r.isError, true, `${name}: ${r.content[0]?.text}`);
  assert.equal(r.content.length, 1, `${name}: one text block`);
  const text = r.content[0]?.text ?? '';
  const parsed = JSON.parse(text) as unknown;
  assert.equal(text, JSON.stringify(parsed, null, 2), `${name}: pretty-printed JSON`);
  return parsed;
}
const stdout = (output: Line[]) => output.filter((l) => l.stream === 'stdout').map((l) => l.text);

async function flow(c: MsbClient, name: string): Promise<void> {
  assert.deepEqual(await c.tools(), [
    'sandbox_start',
    'sandbox_stop',
    'sandbox_run_code',
    'sandbox_run_command',
    'sandbox_get_metrics',
  ]);
  const prompts = await c.prompts();
  assert.deepEqual(
    prompts.map((p) => [p.name, p.arguments?.map((a) => `${a.name}:${a.required}`)]),
    [
      ['create_python_sandbox', ['sandbox_name:true', 'namespace:true']],
      ['create_node_sandbox', ['sandbox_name:true', 'namespace:true']],
    ],
  );
  const got = await c.prompt('create_node_sandbox', { sandbox_name: name, namespace: 'development' });
  const text = got.messages[0]?.content.text ?? '';
  assert.match(text, new RegExp(`'${name}' in namespace 'development'`));
  assert.match(text, /sandbox_start/);
  assert.match(text, /microsandbox\/node/);

  // One name in two namespaces: two sandboxes.
  assert.equal(
    await value(c, 'sandbox_start', {
      sandbox: name,
      namespace: 'research',
      config: { image: 'microsandbox/python', memory: 512, cpus: 1, envs: ['GREETING=hi'] },
    }),
    `Sandbox ${name} started successfully`,
  );
  assert.equal(
    await value(c, 'sandbox_start', {
      sandbox: name,
      namespace: 'development',
      config: { image: 'microsandbox/node', memory: 512 },
    }),
    `Sandbox ${name} started successfully`,
  );
  const run = async (namespace: string, language: string, code: string) => {
    const r = (await value(c, 'sandbox_run_code', { sandbox: name, namespace, code, language })) as {
      status: string;
      language: string;
      output: Line[];
    };
    assert.equal(r.status, 'success');
    assert.equal(r.language, language);
    return r.output;
  };
  // Python, state kept between calls; the last expression is echoed as an interpreter did.
  await run('research', 'python', 'import math\nresult = math.sqrt(16)');
  assert.deepEqual(
    stdout(await run('research', 'python', "print(f'Square root: {result}')\nint(result) + 1")),
    ['Square root: 4.0', '5'],
  );
  // The other namespace's sandbox of the same name is another sandbox.
  assert.deepEqual(stdout(await run('development', 'python', "print('result' in globals())")), ['False']);
  // Node.js, state kept between calls.
  await run('development', 'nodejs', "const data = { message: 'Hello from Node.js!' };\nlet n = 20;");
  assert.deepEqual(
    stdout(await run('development', 'nodejs', 'n += 1;\nconsole.log(JSON.stringify(data), n);')),
    ['{"message":"Hello from Node.js!"} 21'],
  );
  // An exception: its traceback on stderr, status still success (as microsandbox's portal answered).
  const failed = await run('research', 'python', "raise ValueError('nope')");
  assert.ok(
    failed.some((l) => l.stream === 'stderr' && /ValueError: nope/.test(l.text)),
    JSON.stringify(failed),
  );

  const cmd = (await value(c, 'sandbox_run_command', {
    sandbox: name,
    namespace: 'research',
    command: 'sh',
    args: ['-c', 'echo "$GREETING"; echo oops >&2; exit 3'],
  })) as Json;
  assert.deepEqual(cmd, {
    command: 'sh',
    args: ['-c', 'echo "$GREETING"; echo oops >&2; exit 3'],
    exit_code: 3,
    success: false,
    output: [
      { stream: 'stdout', text: 'hi' },
      { stream: 'stderr', text: 'oops' },
    ],
  });
  const ls = (await value(c, 'sandbox_run_command', {
    sandbox: name,
    namespace: 'development',
    command: 'ls',
    args: ['-d', '/tmp'],
  })) as { exit_code: number; success: boolean; output: Line[] };
  assert.deepEqual([ls.exit_code, ls.success, stdout(ls.output)], [0, true, ['/tmp']]);

  type Metrics = { sandboxes: Json[] };
  const mine = (m: Metrics) => m.sandboxes.filter((s) => s.name === name);
  const all = mine((await value(c, 'sandbox_get_metrics', { namespace: '*' })) as Metrics);
  assert.deepEqual(all.map((s) => s.namespace).sort(), ['development', 'research']);
  for (const s of all) {
    assert.equal(s.running, true);
    assert.deepEqual(Object.keys(s).sort(), [
      'cpu_usage',
      'disk_usage',
      'memory_usage',
      'name',
      'namespace',
      'running',
    ]);
    assert.equal(typeof s.cpu_usage, 'number');
    assert.ok((s.memory_usage as number) > 0, JSON.stringify(s));
    assert.equal(typeof s.disk_usage, 'number');
  }
  const one = (await value(c, 'sandbox_get_metrics', { namespace: 'research', sandbox: name })) as Metrics;
  assert.deepEqual(
    one.sandboxes.map((s) => `${s.namespace}/${s.name}`),
    [`research/${name}`],
  );

  assert.equal(
    await value(c, 'sandbox_stop', { sandbox: name, namespace: 'research' }),
    `Sandbox ${name} stopped successfully`,
  );
  const left = mine((await value(c, 'sandbox_get_metrics', { namespace: '*' })) as Metrics);
  assert.deepEqual(
    left.map((s) => s.namespace),
    ['development'],
  );
  const gone = await c.call('sandbox_run_code', {
    sandbox: name,
    namespace: 'research',
    code: '1',
    language: 'python',
  });
  assert.equal(gone.isError, true);
  assert.match(gone.content[0]?.text ?? '', /^Error: /);
  const lang = await c.call('sandbox_run_code', {
    sandbox: name,
    namespace: 'development',
    code: '1',
    language: 'cobol',
  });
  assert.equal(lang.isError, true);
  assert.match(lang.content[0]?.text ?? '', /^Error: Unsupported language: cobol/);
  await value(c, 'sandbox_stop', { sandbox: name, namespace: 'development' });
}

describe('microsandbox toolset (real daemon)', { skip: skip ?? false }, () => {
  let stateDir: string;
  let daemon: ServedDaemon | undefined;

  before(async () => {
    stateDir = makeStateDir();
    const tokens = join(stateDir, 'tokens');
    writeFileSync(tokens, `${TOKEN} alice\n`, { mode: 0o600 });
    daemon = await startServe(stateDir, ['--token-file', tokens]);
  });
  after(async () => {
    await stopServeAndClean(daemon?.child, stateDir);
  });

  it('plain JSON-RPC POSTs to /mcp/microsandbox, as msb server clients sent them', async () => {
    let id = 0;
    const rpc = async (method: string, params: Json = {}): Promise<Json> => {
      const res = await fetch(`${daemon?.url}/mcp/microsandbox`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
      });
      assert.equal(res.status, 200, method);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(res.headers.get('mcp-session-id'), null, 'no session');
      const body = (await res.json()) as { id: number; result?: Json; error?: unknown };
      assert.equal(body.id, id);
      assert.ok(body.result, `${method}: ${JSON.stringify(body.error)}`);
      return body.result;
    };
    const init = await rpc('initialize', {
      protocolVersion: '2024-11-05',
      capabilities: {},
      clientInfo: { name: 'msb-client', version: '1' },
    });
    assert.equal(init.protocolVersion, '2024-11-05');
    assert.ok((init.capabilities as Json).prompts, 'prompts advertised');
    await flow(
      {
        call: async (name, args) => (await rpc('tools/call', { name, arguments: args })) as unknown as Result,
        tools: async () => ((await rpc('tools/list')).tools as { name: string }[]).map((t) => t.name),
        prompts: async () => (await rpc('prompts/list')).prompts as Prompt[],
        prompt: async (name, args) =>
          (await rpc('prompts/get', { name, arguments: args })) as unknown as {
            messages: { content: { text?: string } }[];
          },
      },
      'http-work',
    );
    const anon = await fetch(`${daemon?.url}/mcp/microsandbox`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(anon.status, 401, 'the same bearer token as /mcp');
  });

  it('the v1 SDK over stdio', async () => {
    const client = new Client({ name: 'microsandbox-user', version: '1' });
    await client.connect(
      new StdioClientTransport(forkboxMcpServer(stateDir, { extraArgs: ['--toolset', 'microsandbox'] })),
    );
    try {
      await flow(
        {
          call: async (name, args) =>
            (await client.callTool({ name, arguments: args }, CallToolResultSchema, {
              timeout: 120_000,
            })) as Result,
          tools: async () => (await client.listTools()).tools.map((t) => t.name),
          prompts: async () => (await client.listPrompts()).prompts,
          prompt: async (name, args) =>
            (await client.getPrompt({ name, arguments: args })) as {
              messages: { content: { text?: string } }[];
            },
        },
        'stdio-work',
      );
    } finally {
      await client.close();
    }
  });
});
