/**
 * forkbox's MCP server: an McpServer (SDK v2) exposing the tools of the selected toolsets over a
 * ForkboxApi. Transport-agnostic: stdio, HTTP and in-memory tests build it the same way and choose the
 * scope of the default sandbox by the `defaults` holder they pass.
 */

import type { CallToolResult, ServerContext } from '@modelcontextprotocol/server';
import { McpServer } from '@modelcontextprotocol/server';
import type { ForkboxApi } from '../../service/api.ts';
import type { ConformanceFixtures } from './conformance-fixtures.ts';
import { createSandboxResolver, type DefaultSandbox } from './default-sandbox.ts';
import { toolError } from './errors.ts';
import type { ToolContext, ToolDef, ToolLog } from './tool-kit.ts';
import { selectTools } from './toolsets.ts';

export { createDefaultSandbox, type DefaultSandbox } from './default-sandbox.ts';

export interface ForkboxMcpServerOptions {
  api: ForkboxApi;
  defaults: DefaultSandbox;
  /** Toolset names (default ['forkbox']). */
  toolsets?: string[];
  log?: ToolLog;
  version: string;
  /**
   * Also register the MCP conformance suite's fixture tools, resources and prompts
   * (`forkbox serve --conformance-fixtures`). Absent: forkbox's tools only.
   */
  fixtures?: ConformanceFixtures | undefined;
}

const SILENT: ToolLog = { debug: () => undefined, warn: () => undefined };

const INSTRUCTIONS =
  'forkbox runs commands, code and file operations in isolated Linux sandboxes (no network). Tools that act on a sandbox take an optional `sandbox` (id or name); without it they use a default sandbox that belongs to this connection and is created on first use. Python code_run calls share one persistent REPL per sandbox.';

/** Progress notifications for one request: ordered, increasing, and all sent before the result. */
function progressReporter(
  ctx: ServerContext,
  log: ToolLog,
): { report(m: string): void; flush(): Promise<void> } {
  const token = ctx.mcpReq._meta?.progressToken;
  let chain: Promise<void> = Promise.resolve();
  let n = 0;
  return {
    report(message) {
      if (token === undefined || ctx.mcpReq.signal.aborted) return;
      const progress = ++n;
      chain = chain
        .then(() =>
          ctx.mcpReq.notify({
            method: 'notifications/progress',
            params: { progressToken: token, progress, message },
          }),
        )
        .catch((e: unknown) => log.debug({ err: (e as Error).message }, 'progress notification not sent'));
    },
    flush: () => chain,
  };
}

function register(server: McpServer, tool: ToolDef, base: Omit<ToolContext, 'signal' | 'progress'>): void {
  server.registerTool(
    tool.name,
    {
      title: tool.title,
      description: tool.description,
      inputSchema: tool.input,
      outputSchema: tool.output,
      annotations: { title: tool.title, ...tool.annotations },
    },
    async (args: unknown, ctx: ServerContext): Promise<CallToolResult> => {
      const progress = progressReporter(ctx, base.log);
      try {
        const out = await tool.run(args as never, {
          ...base,
          signal: ctx.mcpReq.signal,
          progress: progress.report,
        });
        await progress.flush();
        const structured = out.structured as Record<string, unknown>;
        return {
          content: [{ type: 'text', text: JSON.stringify(structured) }, ...(out.extra ?? [])],
          structuredContent: structured,
          ...(out.isError ? { isError: true } : {}),
        };
      } catch (e) {
        await progress.flush();
        base.log.debug({ tool: tool.name, err: (e as Error).message }, 'tool failed');
        return toolError(e);
      }
    },
  );
}

export function createForkboxMcpServer(opts: ForkboxMcpServerOptions): McpServer {
  const server = new McpServer(
    { name: 'forkbox', version: opts.version },
    opts.fixtures
      ? { ...opts.fixtures.serverOptions(), instructions: INSTRUCTIONS }
      : { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );
  const log = opts.log ?? SILENT;
  const base = { api: opts.api, sandbox: createSandboxResolver(opts.api, opts.defaults), log };
  for (const tool of selectTools(opts.toolsets)) register(server, tool, base);
  opts.fixtures?.register(server);
  return server;
}
