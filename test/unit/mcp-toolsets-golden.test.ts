/**
 * Each compatibility toolset's tools/list against its golden file (test/golden/toolsets/<name>.json),
 * written by hand from the replaced system's published tool table: tool names in order, required
 * arguments, argument names and the defaults that system advertised — exactly. Every registered toolset
 * but the canonical one must have a golden file (the `browser` toolset's is forkbox's own design, held
 * the same way so that a change to it is deliberate). Also: the systems' own bounds hold at their edges
 * (forkd's n up to 1000), and a toolset's errors follow its system's convention.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { createDefaultSandbox, createForkboxMcpServer } from '../../src/protocol/mcp/server.ts';
import { DEFAULT_TOOLSET, TOOLSETS } from '../../src/protocol/mcp/toolsets.ts';
import { createTestEngine } from '../helpers/test-engine.ts';

interface GoldenArgs {
  required: string[];
  /** `fields`: an object argument's own fields (DevBench's one `input_data`), checked the same way. */
  args: Record<string, { default?: unknown; fields?: GoldenArgs }>;
}
interface GoldenPrompt {
  name: string;
  required: string[];
  args: string[];
}
interface Golden {
  toolset: string;
  tools: ({ name: string } & GoldenArgs)[];
  /** The system's prompts (absent: it had none): names in order, argument names, required ones. */
  prompts?: GoldenPrompt[];
}
type Schema = { properties?: Record<string, Schema & { default?: unknown }>; required?: string[] };

function checkArgs(where: string, schema: Schema, g: GoldenArgs): void {
  const props = schema.properties ?? {};
  assert.deepEqual(Object.keys(props).sort(), Object.keys(g.args).sort(), `${where}: argument names`);
  assert.deepEqual(
    [...(schema.required ?? [])].sort(),
    [...g.required].sort(),
    `${where}: required arguments`,
  );
  for (const [arg, spec] of Object.entries(g.args)) {
    assert.deepEqual(props[arg]?.default, spec.default, `${where}.${arg}: default`);
    if (spec.fields) checkArgs(`${where}.${arg}`, props[arg] ?? {}, spec.fields);
  }
}

const GOLDEN_DIR = join(import.meta.dirname, '../golden/toolsets');

async function withClient<T>(toolset: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const t = createTestEngine();
  const server = createForkboxMcpServer({
    api: t.api,
    defaults: createDefaultSandbox(),
    toolsets: [toolset],
    version: '0',
  });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(ct);
  try {
    return await fn(client);
  } finally {
    await client.close();
    await server.close();
    await t.close();
  }
}

const compat = Object.keys(TOOLSETS).filter((n) => n !== DEFAULT_TOOLSET);

describe('compatibility toolsets match their golden files', () => {
  it('every compatibility toolset has one', () => {
    assert.ok(
      ['forkd', 'podflare', 'devbench', 'agentkernel', 'microsandbox'].every((n) => compat.includes(n)),
    );
    for (const name of compat) assert.ok(existsSync(join(GOLDEN_DIR, `${name}.json`)), name);
  });

  for (const name of compat) {
    it(`${name}: tools/list is the reference's`, async () => {
      const golden = JSON.parse(readFileSync(join(GOLDEN_DIR, `${name}.json`), 'utf8')) as Golden;
      assert.equal(golden.toolset, name);
      const { tools } = await withClient(name, (c) => c.listTools());
      assert.deepEqual(
        tools.map((t) => t.name),
        golden.tools.map((t) => t.name),
        'tool names, in order',
      );
      for (const g of golden.tools) {
        const t = tools.find((x) => x.name === g.name);
        assert.ok(t, g.name);
        checkArgs(g.name, t.inputSchema as Schema, g);
      }
      if (!golden.prompts) return;
      const { prompts } = await withClient(name, (c) => c.listPrompts());
      assert.deepEqual(
        prompts.map((p) => p.name),
        golden.prompts.map((p) => p.name),
        'prompt names, in order',
      );
      for (const g of golden.prompts) {
        const args = prompts.find((p) => p.name === g.name)?.arguments ?? [];
        assert.deepEqual(
          args.map((a) => a.name),
          g.args,
          `${g.name}: argument names`,
        );
        assert.deepEqual(
          args.filter((a) => a.required).map((a) => a.name),
          g.required,
          `${g.name}: required arguments`,
        );
      }
    });
  }
});

describe('forkd: bounds and errors', () => {
  it("spawn_sandboxes takes n from 1 to 1000, forkd's bound", async () => {
    await withClient('forkd', async (c) => {
      for (const n of [0, 1001, 2.5]) {
        const r = await c.callTool({ name: 'spawn_sandboxes', arguments: { snapshot_tag: 'nope', n } });
        assert.equal(r.isError, true, `n=${n}`);
        const text = (r.content as { text: string }[])[0]?.text ?? '';
        assert.match(text, /^Error executing tool spawn_sandboxes: 400 invalid arguments .*`n`/, text);
      }
      // 1000 passes validation: the tag is what is refused (nothing is spawned from an unknown tag).
      const r = await c.callTool({ name: 'spawn_sandboxes', arguments: { snapshot_tag: 'nope', n: 1000 } });
      const text = (r.content as { text: string }[])[0]?.text ?? '';
      assert.match(
        text,
        /^Error executing tool spawn_sandboxes: 404 no snapshot or template is tagged 'nope'/,
      );
    });
  });

  it('branch_sandbox refuses mode and diff together, as forkd did', async () => {
    await withClient('forkd', async (c) => {
      const r = await c.callTool({
        name: 'branch_sandbox',
        arguments: { sandbox_id: 'sb-x', mode: 'live', diff: true },
      });
      assert.equal(r.isError, true);
      assert.match((r.content as { text: string }[])[0]?.text ?? '', /400 mode and diff are both set/);
    });
  });

  it('results are raw JSON: a list is one JSON text block without structuredContent', async () => {
    await withClient('forkd', async (c) => {
      const r = await c.callTool({ name: 'list_snapshots', arguments: {} });
      assert.equal(r.isError, undefined);
      assert.equal(r.structuredContent, undefined);
      const list = JSON.parse((r.content as { text: string }[])[0]?.text ?? '') as { tag: string }[];
      assert.deepEqual(
        list.map((s) => s.tag),
        ['default'],
      );
    });
  });
});

describe('podflare: bounds', () => {
  it("fork takes n from 1 to 32, Podflare's bound", async () => {
    await withClient('podflare', async (c) => {
      for (const n of [0, 33]) {
        const r = await c.callTool({ name: 'fork', arguments: { n } });
        assert.equal(r.isError, true, `n=${n}`);
        assert.match(
          (r.content as { text: string }[])[0]?.text ?? '',
          /invalid arguments for fork: `n`.*\(HTTP 400, invalid_argument\)$/,
        );
      }
    });
  });
});

describe('forkd: spawn_sandboxes past the engine bound', () => {
  it('150 children of a branch are restores of at most 100, all tagged', async () => {
    const t = createTestEngine();
    const server = createForkboxMcpServer({
      api: t.api,
      defaults: createDefaultSandbox(),
      toolsets: ['forkd'],
      version: '0',
    });
    const [ct, st] = InMemoryTransport.createLinkedPair();
    await server.connect(st);
    const c = new Client({ name: 'test', version: '1' });
    await c.connect(ct);
    const value = async (name: string, args: Record<string, unknown>) => {
      const r = await c.callTool({ name, arguments: args });
      const text = (r.content as { text: string }[])[0]?.text ?? '';
      assert.notEqual(r.isError, true, text);
      return JSON.parse(text) as unknown;
    };
    try {
      const [parent] = (await value('spawn_sandboxes', { snapshot_tag: 'default' })) as { id: string }[];
      assert.ok(parent);
      await value('branch_sandbox', { sandbox_id: parent.id, tag: 'wide' });
      const before = t.api.calls.length;
      const kids = (await value('spawn_sandboxes', { snapshot_tag: 'wide', n: 150 })) as {
        id: string;
        snapshot_tag: string;
      }[];
      assert.equal(kids.length, 150);
      assert.equal(new Set(kids.map((k) => k.id)).size, 150);
      assert.ok(kids.every((k) => k.snapshot_tag === 'wide'));
      const restores = t.api.calls
        .slice(before)
        .filter((x) => x.method === 'restoreSnapshot')
        .map((x) => (x.args[1] as { n: number }).n);
      assert.deepEqual(restores, [100, 50]);
    } finally {
      await c.close();
      await server.close();
      await t.close();
    }
  });
});
