/**
 * Third-party MCP client adapters against one real `forkbox serve` over Streamable HTTP, each through its
 * own tool-calling path (what an agent framework hands the model and calls back): the OpenAI Agents SDK's
 * MCP server wrapper with strict schema conversion (every optional argument sent as null, as a strict
 * model does), Google GenAI's MCP-to-function-declaration conversion, the Vercel AI SDK's MCP client,
 * LangChain's MCP adapters, and mcp-remote bridging stdio to the HTTP listener (driven by the v1 SDK).
 * For each: list the tools, run a command, run Python code.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMCPClient } from '@ai-sdk/mcp';
import { mcpToTool } from '@google/genai';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { getAllMcpTools, MCPServerStreamableHttp, RunContext } from '@openai/agents-core';
import { nativeUnavailable } from '../helpers/native.ts';
import { servedSuite } from '../helpers/served-suite.ts';
import { connectMcpRemote } from './adapter-clients.ts';

const skip = nativeUnavailable();

describe('third-party MCP adapters over HTTP', { skip: skip ?? false }, () => {
  const served = servedSuite();

  it('OpenAI Agents SDK: every tool converts strictly; a strict call (nulls for the unset) runs', async () => {
    const server = new MCPServerStreamableHttp({ url: served.mcpUrl, name: 'forkbox' });
    await server.connect();
    try {
      const tools = (await getAllMcpTools({
        mcpServers: [server],
        convertSchemasToStrict: true,
        runContext: new RunContext(),
      } as never)) as unknown as {
        name: string;
        strict: boolean;
        parameters: { properties: Record<string, unknown> };
        invoke(ctx: RunContext, input: string): Promise<unknown>;
      }[];
      assert.ok(tools.length > 20, `${tools.length} tools`);
      for (const t of tools) assert.equal(t.strict, true, `${t.name} converts to a strict schema`);
      const strictArgs = (name: string, set: Record<string, unknown>) => {
        const t = tools.find((x) => x.name === name);
        assert.ok(t, name);
        const all = Object.fromEntries(Object.keys(t.parameters.properties).map((k) => [k, null]));
        return t.invoke(new RunContext(), JSON.stringify({ ...all, ...set }));
      };
      assert.match(
        JSON.stringify(await strictArgs('exec_run', { command: 'echo agents-$((6*7))' })),
        /agents-42/,
      );
      assert.match(JSON.stringify(await strictArgs('code_run', { code: '6 * 7' })), /42/);
    } finally {
      await server.close();
    }
  });

  it('Google GenAI: function declarations from the MCP tools; a function call runs', async () => {
    const client = new Client({ name: 'genai', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(served.mcpUrl)));
    try {
      const callable = mcpToTool(client as never);
      const tool = await callable.tool();
      const decls = tool.functionDeclarations ?? [];
      assert.ok(decls.length > 20);
      for (const d of decls) {
        const schema = JSON.stringify(d.parameters ?? d.parametersJsonSchema ?? {});
        assert.doesNotMatch(schema, /"\$schema"|"propertyNames"|"additionalProperties"|"\$ref"/, d.name);
      }
      const parts = await callable.callTool([{ name: 'exec_run', args: { command: 'echo genai-$((6*7))' } }]);
      assert.match(JSON.stringify(parts), /genai-42/);
      const py = await callable.callTool([{ name: 'code_run', args: { code: '6 * 7' } }]);
      assert.match(JSON.stringify(py), /42/);
    } finally {
      await client.close();
    }
  });

  it('Vercel AI SDK: tools() and execute', async () => {
    const client = await createMCPClient({ transport: { type: 'http', url: served.mcpUrl } });
    try {
      const tools = await client.tools();
      assert.ok(Object.keys(tools).length > 20);
      const opts = { toolCallId: 't1', messages: [] } as never;
      const run = await tools.exec_run?.execute?.({ command: 'echo vercel-$((6*7))' }, opts);
      assert.match(JSON.stringify(run), /vercel-42/);
      const py = await tools.code_run?.execute?.({ code: '6 * 7' }, opts);
      assert.match(JSON.stringify(py), /42/);
    } finally {
      await client.close();
    }
  });

  it('LangChain MCP adapters: getTools and invoke', async () => {
    const client = new MultiServerMCPClient({
      mcpServers: { forkbox: { transport: 'http', url: served.mcpUrl } },
    });
    try {
      const tools = await client.getTools();
      assert.ok(tools.length > 20);
      const byName = (n: string) => tools.find((t) => t.name === n || t.name.endsWith(`__${n}`));
      const run = await byName('exec_run')?.invoke({ command: 'echo langchain-$((6*7))' });
      assert.match(JSON.stringify(run), /langchain-42/);
      const py = await byName('code_run')?.invoke({ code: '6 * 7' });
      assert.match(JSON.stringify(py), /42/);
    } finally {
      await client.close();
    }
  });

  it('mcp-remote: stdio bridged to the HTTP listener', async () => {
    const { client, close } = await connectMcpRemote(served.mcpUrl);
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'exec_run'));
      const r = await client.callTool({ name: 'exec_run', arguments: { command: 'echo remote-$((6*7))' } });
      assert.match(JSON.stringify(r.content), /remote-42/);
      const py = await client.callTool({ name: 'code_run', arguments: { code: '6 * 7' } });
      assert.match(JSON.stringify(py.content), /42/);
    } finally {
      await close();
    }
  });
});
