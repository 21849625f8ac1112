/**
 * The MCP server's wiring (SDK v2 client ↔ server in memory) over the real engine and the fake
 * runtime: tool listing, the structured + text result shape (bulk fields once), error mapping, input
 * validation, toolset selection and the lazy default sandbox. The real runtime is exercised in
 * test/integration/mcp-inmemory.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { HINTS, SPEC_DEFAULT_HINTS } from '../../src/protocol/mcp/kit/tool-kit.ts';
import { createDefaultSandbox, createForkboxMcpServer } from '../../src/protocol/mcp/server.ts';
import { CANONICAL_TOOLS } from '../../src/protocol/mcp/tools/index.ts';
import { selectTools } from '../../src/protocol/mcp/toolsets.ts';
import { createTestEngine, type RecordedApi } from '../helpers/test-engine.ts';

async function connect(api: RecordedApi, defaults = createDefaultSandbox()) {
  const server = createForkboxMcpServer({ api, defaults, version: '0.0.0-test' });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client({ name: 'test', version: '1' });
  await client.connect(ct);
  return {
    client,
    defaults,
    async call(name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
      return (await client.callTool({ name, arguments: args })) as CallToolResult;
    },
    async close() {
      await client.close();
      await server.close();
    },
  };
}

const text = (r: CallToolResult): string => {
  const first = r.content[0];
  return first?.type === 'text' ? first.text : '';
};

describe('mcp server (real engine, fake runtime)', () => {
  it('lists every canonical tool with title, annotations and both schemas', async () => {
    const c = await connect(createTestEngine().api);
    try {
      const { tools } = await c.client.listTools();
      assert.deepEqual(
        tools.map((t) => t.name),
        selectTools().map((t) => t.name),
      );
      assert.equal(tools.length, CANONICAL_TOOLS.length);
      assert.ok(tools.some((t) => t.name === 'sandbox_fork'));
      for (const t of tools) {
        assert.match(t.name, /^[a-z]+_[a-z_]+$/);
        assert.ok(t.title, `${t.name} has a title`);
        assert.ok((t.description ?? '').length >= 15, `${t.name} has a description`);
        assert.equal(t.inputSchema.type, 'object');
        assert.equal(t.outputSchema?.type, 'object', `${t.name} has an output schema`);
        // Only hints that differ from the spec's defaults are sent; with the defaults applied, a client
        // sees exactly the hints the tool sets.
        const def = CANONICAL_TOOLS.find((d) => d.name === t.name);
        assert.ok(def && t.annotations, `${t.name} has annotations`);
        const effective = { ...SPEC_DEFAULT_HINTS, ...t.annotations };
        for (const k of Object.keys(SPEC_DEFAULT_HINTS) as (keyof typeof SPEC_DEFAULT_HINTS)[]) {
          if (def.annotations.readOnlyHint && (k === 'destructiveHint' || k === 'idempotentHint')) continue;
          assert.equal(effective[k], def.annotations[k], `${t.name}.${k}`);
        }
      }
      const byName = new Map(tools.map((t) => [t.name, t]));
      assert.equal(byName.get('sandbox_list')?.annotations?.readOnlyHint, true);
      assert.equal(
        { ...SPEC_DEFAULT_HINTS, ...byName.get('sandbox_kill')?.annotations }.destructiveHint,
        true,
      );
      assert.equal({ ...SPEC_DEFAULT_HINTS, ...byName.get('exec_run')?.annotations }.readOnlyHint, false);
      assert.deepEqual(byName.get('exec_run')?.annotations, { openWorldHint: HINTS.run.openWorldHint });
    } finally {
      await c.close();
    }
  });

  it('returns structuredContent with a JSON text copy', async () => {
    const c = await connect(createTestEngine().api);
    try {
      const r = await c.call('sandbox_create', { name: 'one', memory_mb: 256 });
      assert.equal(r.isError, undefined);
      const sc = r.structuredContent as { id: string; name: string; memory_mb: number };
      assert.equal(sc.name, 'one');
      assert.equal(sc.memory_mb, 256);
      assert.deepEqual(JSON.parse(text(r)), sc);
    } finally {
      await c.close();
    }
  });

  it('maps a ForkboxError to an isError result with its message and code', async () => {
    const c = await connect(createTestEngine().api);
    try {
      const r = await c.call('sandbox_get', { sandbox: 'nope' });
      assert.equal(r.isError, true);
      assert.match(text(r), /no sandbox 'nope'.*\[code: not_found\]/);
    } finally {
      await c.close();
    }
  });

  it('rejects bad arguments with a tool error naming the argument and the bound', async () => {
    const c = await connect(createTestEngine().api);
    try {
      const r = await c.call('sandbox_create', { memory_mb: 1 });
      assert.equal(r.isError, true);
      assert.match(
        text(r),
        /invalid arguments for sandbox_create: `memory_mb`: .*>=16.*\[code: invalid_argument\]/,
      );
      const both = await c.call('exec_run', { sandbox: 'x', command: 'true', argv: ['true'] });
      assert.equal(both.isError, true);
    } finally {
      await c.close();
    }
  });

  it('creates the default sandbox on first use, reuses it, and re-creates it once killed', async () => {
    const api = createTestEngine().api;
    const c = await connect(api);
    try {
      const [a, b] = await Promise.all([
        c.call('exec_run', { argv: ['echo', 'a'] }),
        c.call('exec_run', { argv: ['echo', 'b'] }),
      ]);
      assert.equal(a.isError, undefined, text(a));
      assert.equal(b.isError, undefined, text(b));
      const creates = () => api.calls.filter((x) => x.method === 'createSandbox').length;
      assert.equal(creates(), 1, 'concurrent first calls share one creation');
      const first = c.defaults.get();
      assert.ok(first);
      await c.call('sandbox_kill', {});
      await c.call('exec_run', { command: 'true' });
      assert.equal(creates(), 2);
      assert.notEqual(c.defaults.get(), first);
    } finally {
      await c.close();
    }
  });

  it('file_edit replaces exactly once and refuses 0 or 2 matches; if_match guards writes', async () => {
    const api = createTestEngine().api;
    const c = await connect(api);
    try {
      const w = await c.call('file_write', { path: '/a.txt', content: 'x = 1\ny = 1\n' });
      const etag = (w.structuredContent as { etag: string }).etag;
      const none = await c.call('file_edit', { path: '/a.txt', old_string: 'z', new_string: 'q' });
      assert.equal(none.isError, true);
      assert.match(text(none), /0 matches/);
      const two = await c.call('file_edit', { path: '/a.txt', old_string: '= 1', new_string: '= 2' });
      assert.match(text(two), /occurs 2 times/);
      const one = await c.call('file_edit', { path: '/a.txt', old_string: 'y = 1', new_string: 'y = 2' });
      assert.equal(one.isError, undefined, text(one));
      const stale = await c.call('file_write', { path: '/a.txt', content: 'new', if_match: etag });
      assert.equal(stale.isError, true);
      assert.match(text(stale), /changed since you read it.*file_read/);
      const read = await c.call('file_read', { path: '/a.txt' });
      const block = read.content[1];
      assert.equal(block?.type === 'text' ? block.text : undefined, 'x = 1\ny = 2\n');
      assert.equal((read.structuredContent as { content?: string }).content, undefined, 'content once');
    } finally {
      await c.close();
    }
  });

  it('refuses an unknown toolset', () => {
    assert.throws(() => selectTools(['nope']), /unknown toolset 'nope'. Available: forkbox/);
  });
});
