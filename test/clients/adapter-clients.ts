/**
 * The third-party MCP client adapters of test/clients/, each behind one small interface: call a tool the
 * way that framework calls it for a model (what the model would receive comes back as JSON text), with
 * the framework's own abort mechanism and progress hook where it has them, and close it.
 *
 * What each offers (read from its source, checked by adapters-work.test.ts):
 * - OpenAI Agents SDK (`MCPServerStreamableHttp`): strict tools; `invoke(ctx, input, { signal })`; a
 *   request timeout of 60 s (`timeout` option), never reset, and no progress hook (no progress token).
 * - Google GenAI (`mcpToTool` over a v1 SDK client): `callTool` takes no signal (no per-call cancel);
 *   closing its MCP client ends the calls in flight; the v1 SDK's 60 s timeout unless `timeout` is set;
 *   no progress hook.
 * - Vercel AI SDK (`@ai-sdk/mcp`): `execute(args, { abortSignal })` aborts the HTTP request; no timeout
 *   on tool calls; no progress hook.
 * - LangChain MCP adapters: `invoke(args, { signal })`, `onProgress` in the server config (a progress
 *   token is sent), the v1 SDK's 60 s timeout — not reset by progress — unless `defaultToolTimeout`.
 * - mcp-remote: the v1 SDK client over stdio, the proxy forwarding every message to the HTTP listener:
 *   the SDK's signal, `onprogress` and `resetTimeoutOnProgress` all work through it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMCPClient } from '@ai-sdk/mcp';
import { mcpToTool } from '@google/genai';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { getAllMcpTools, MCPServerStreamableHttp, RunContext } from '@openai/agents-core';
import { ROOT } from '../helpers/daemon.ts';
import { processEnv } from '../helpers/mcp-stdio.ts';

export type Args = Record<string, unknown>;
export interface CallOptions {
  signal?: AbortSignal;
  onProgress?: () => void;
}
export interface AdapterClient {
  name: string;
  /** Call `tool` as the framework does for a model; what the model would get, as JSON text. */
  call(tool: string, args: Args, opts?: CallOptions): Promise<string>;
  close(): Promise<void>;
}
/** Per-client settings: a request timeout (ms) where the client has one. */
export interface ClientSettings {
  timeoutMs?: number;
}

type StrictTool = {
  name: string;
  parameters: { properties: Record<string, unknown> };
  invoke(ctx: RunContext, input: string, details?: { signal?: AbortSignal }): Promise<unknown>;
};

export async function openaiAgents(url: string, s: ClientSettings = {}): Promise<AdapterClient> {
  const server = new MCPServerStreamableHttp({
    url,
    name: 'forkbox',
    ...(s.timeoutMs ? { timeout: s.timeoutMs } : {}),
  });
  await server.connect();
  const tools = (await getAllMcpTools({
    mcpServers: [server],
    convertSchemasToStrict: true,
    runContext: new RunContext(),
  } as never)) as unknown as StrictTool[];
  return {
    name: 'OpenAI Agents SDK',
    async call(tool, args, opts = {}) {
      const t = tools.find((x) => x.name === tool);
      if (!t) throw new Error(`no tool ${tool}`);
      // A strict model sends every argument: null for the ones it leaves unset.
      const all = Object.fromEntries(Object.keys(t.parameters.properties).map((k) => [k, null]));
      const input = JSON.stringify({ ...all, ...args });
      const details = opts.signal ? { signal: opts.signal } : undefined;
      return JSON.stringify(await t.invoke(new RunContext(), input, details));
    },
    close: () => server.close(),
  };
}

export async function googleGenai(url: string, s: ClientSettings = {}): Promise<AdapterClient> {
  const client = new Client({ name: 'genai', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const callable = mcpToTool(client as never, s.timeoutMs ? { timeout: s.timeoutMs } : {});
  return {
    name: 'Google GenAI',
    async call(tool, args, opts = {}) {
      if (opts.signal || opts.onProgress) throw new Error('mcpToTool has no signal and no progress hook');
      return JSON.stringify(await callable.callTool([{ name: tool, args }]));
    },
    close: () => client.close(),
  };
}

export async function vercelAi(url: string): Promise<AdapterClient> {
  const client = await createMCPClient({ transport: { type: 'http', url } });
  const tools = await client.tools();
  return {
    name: 'Vercel AI SDK',
    async call(tool, args, opts = {}) {
      if (opts.onProgress) throw new Error('the Vercel AI SDK MCP client has no progress hook');
      const t = tools[tool];
      if (!t?.execute) throw new Error(`no tool ${tool}`);
      const o = { toolCallId: 't', messages: [], ...(opts.signal ? { abortSignal: opts.signal } : {}) };
      return JSON.stringify(await t.execute(args, o as never));
    },
    close: () => client.close(),
  };
}

export async function langchain(
  url: string,
  s: ClientSettings & { onProgress?: () => void } = {},
): Promise<AdapterClient> {
  const client = new MultiServerMCPClient({
    mcpServers: {
      forkbox: {
        transport: 'http',
        url,
        ...(s.timeoutMs ? { defaultToolTimeout: s.timeoutMs } : {}),
      },
    },
    ...(s.onProgress ? { onProgress: () => s.onProgress?.() } : {}),
  } as never);
  const tools = await client.getTools();
  return {
    name: 'LangChain MCP adapters',
    async call(tool, args, opts = {}) {
      if (opts.onProgress) throw new Error('LangChain takes its progress hook in the client config');
      const t = tools.find((x) => x.name === tool || x.name.endsWith(`__${tool}`));
      if (!t) throw new Error(`no tool ${tool}`);
      return JSON.stringify(await t.invoke(args, opts.signal ? { signal: opts.signal } : {}));
    },
    close: () => client.close(),
  };
}

/**
 * A v1 SDK client over stdio to mcp-remote, which bridges it to the HTTP listener at `url`; `close` ends
 * the client and removes mcp-remote's own config dir.
 */
export async function connectMcpRemote(url: string): Promise<{ client: Client; close(): Promise<void> }> {
  const config = mkdtempSync(join(tmpdir(), 'forkbox-mcp-remote-'));
  const env = { MCP_REMOTE_CONFIG_DIR: config, ...processEnv() };
  const client = new Client({ name: 'via-mcp-remote', version: '1' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [
        join(ROOT, 'node_modules/mcp-remote/dist/proxy.js'),
        url,
        '--allow-http',
        '--transport',
        'http-only',
      ],
      env,
      cwd: ROOT,
      stderr: 'ignore',
    }),
  );
  return {
    client,
    async close() {
      await client.close();
      rmSync(config, { recursive: true, force: true });
    },
  };
}

export async function mcpRemote(url: string): Promise<AdapterClient> {
  const { client, close } = await connectMcpRemote(url);
  return {
    name: 'mcp-remote',
    async call(tool, args, opts = {}) {
      const o = {
        ...(opts.signal ? { signal: opts.signal } : {}),
        ...(opts.onProgress
          ? { onprogress: () => opts.onProgress?.(), resetTimeoutOnProgress: true, timeout: 60_000 }
          : {}),
      };
      const r = await client.callTool({ name: tool, arguments: args }, undefined, o);
      return JSON.stringify(r.content);
    },
    close,
  };
}
