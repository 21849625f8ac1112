/**
 * The conformance fixtures (`forkbox serve --conformance-fixtures`) on the MCP server factory, in memory
 * over the fake API: absent unless asked for; when asked for, the suite's tools, resources and prompts
 * answer as its scenarios expect, including a multi-round-trip tool served to a 2025-era client through
 * the SDK's legacy shim. The suite itself runs in test/integration/mcp-conformance.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { createConformanceFixtures } from '../../src/protocol/mcp/conformance/conformance-fixtures.ts';
import { createDefaultSandbox, createForkboxMcpServer } from '../../src/protocol/mcp/server.ts';
import { selectTools } from '../../src/protocol/mcp/toolsets.ts';
import { createTestEngine } from '../helpers/test-engine.ts';

async function connect(fixtures: boolean) {
  const server = createForkboxMcpServer({
    api: createTestEngine().api,
    defaults: createDefaultSandbox(),
    version: '0.0.0-test',
    ...(fixtures ? { fixtures: createConformanceFixtures() } : {}),
  });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await server.connect(st);
  const client = new Client({ name: 'test', version: '1' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler('elicitation/create', async () => ({
    action: 'accept' as const,
    content: { name: 'Alice' },
  }));
  await client.connect(ct);
  return {
    client,
    async close() {
      await client.close();
      await server.close();
    },
  };
}

const text = (r: CallToolResult): string => (r.content[0]?.type === 'text' ? r.content[0].text : '');

describe('conformance fixtures', () => {
  it('are not served without the flag: forkbox tools only, no resources or prompts', async () => {
    const c = await connect(false);
    try {
      const { tools } = await c.client.listTools();
      assert.deepEqual(
        tools.map((t) => t.name),
        selectTools().map((t) => t.name),
      );
      const caps = c.client.getServerCapabilities();
      assert.equal(caps?.resources, undefined);
      assert.equal(caps?.prompts, undefined);
      await assert.rejects(c.client.callTool({ name: 'test_simple_text', arguments: {} }), /not found/i);
    } finally {
      await c.close();
    }
  });

  it('are served with the flag, beside forkbox tools', async () => {
    const c = await connect(true);
    try {
      const names = (await c.client.listTools()).tools.map((t) => t.name);
      for (const n of ['exec_run', 'test_simple_text', 'test_tool_with_progress', 'test_sampling']) {
        assert.ok(names.includes(n), `${n} listed`);
      }
      const simple = (await c.client.callTool({ name: 'test_simple_text', arguments: {} })) as CallToolResult;
      assert.equal(text(simple), 'This is a simple text response for testing.');
      const err = (await c.client.callTool({ name: 'test_error_handling', arguments: {} })) as CallToolResult;
      assert.equal(err.isError, true);

      const res = await c.client.readResource({ uri: 'test://template/123/data' });
      const first = res.contents[0];
      assert.ok(first && 'text' in first);
      assert.deepEqual(JSON.parse(first.text), { id: '123', templateTest: true, data: 'Data for ID: 123' });

      const prompt = await c.client.getPrompt({
        name: 'test_prompt_with_arguments',
        arguments: { arg1: 'a', arg2: 'b' },
      });
      const msg = prompt.messages[0]?.content;
      assert.equal(msg?.type === 'text' ? msg.text : '', "Prompt with arguments: arg1='a', arg2='b'");

      const done = await c.client.complete({
        ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
        argument: { name: 'arg1', value: 'par' },
      });
      assert.deepEqual(done.completion.values, ['paris', 'park', 'party']);
    } finally {
      await c.close();
    }
  });

  it('serve an input_required tool to a 2025-era client through real elicitation requests', async () => {
    const c = await connect(true);
    try {
      const r = (await c.client.callTool({
        name: 'test_input_required_result_elicitation',
        arguments: {},
      })) as CallToolResult;
      assert.equal(text(r), 'Hello, Alice!');
    } finally {
      await c.close();
    }
  });
});
