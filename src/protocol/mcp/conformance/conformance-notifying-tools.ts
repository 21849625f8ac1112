/**
 * Conformance fixtures (conformance-fixtures.ts): tools that notify while they run — log messages,
 * progress — and the triggers of tool and prompt list changes, on both wires.
 */
import type { McpServer, ServerContext, ServerNotifier } from '@modelcontextprotocol/server';
import { PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server';
import { noArgs, text } from './conformance-content-tools.ts';

/** What the trigger tools publish to on the stateless (2026-07-28) wire. */
export type FixtureNotifier = Pick<ServerNotifier, 'toolsChanged' | 'promptsChanged'>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function isModern(ctx: ServerContext): boolean {
  const env = (ctx.mcpReq.envelope ?? {}) as Record<string, unknown>;
  return typeof env[PROTOCOL_VERSION_META_KEY] === 'string';
}

/** `notifier()` is the stateless handler's notifier once it is set. */
export function registerNotifyingTools(server: McpServer, notifier: () => FixtureNotifier | undefined): void {
  server.registerTool(
    'test_tool_with_logging',
    { description: 'Tests tool that emits log messages during execution', inputSchema: noArgs },
    async (_a, ctx) => {
      for (const [i, data] of [
        'Tool execution started',
        'Tool processing data',
        'Tool execution completed',
      ].entries()) {
        if (i > 0) await sleep(50);
        await ctx.mcpReq.notify({ method: 'notifications/message', params: { level: 'info', data } });
      }
      return text('Tool with logging executed successfully');
    },
  );
  server.registerTool(
    'test_tool_with_progress',
    { description: 'Tests tool that reports progress notifications', inputSchema: noArgs },
    async (_a, ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken ?? 0;
      for (const progress of [0, 50, 100]) {
        await ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken, progress, total: 100, message: `Completed step ${progress} of 100` },
        });
        if (progress !== 100) await sleep(50);
      }
      return text(String(progressToken));
    },
  );
  // 2026-07-28: log notifications only when the request asked for a level (the SDK filters them).
  server.registerTool(
    'test_logging_tool',
    { description: 'Logs one message through the request logger', inputSchema: noArgs },
    async (_a, ctx) => {
      await ctx.mcpReq.log('info', 'test_logging_tool ran');
      return text('logged');
    },
  );
  server.registerTool(
    'test_trigger_tool_change',
    { description: 'Announces a tool list change', inputSchema: noArgs },
    async (_a, ctx) => {
      if (isModern(ctx)) notifier()?.toolsChanged();
      else server.sendToolListChanged();
      return text('tool list change announced');
    },
  );
  server.registerTool(
    'test_trigger_prompt_change',
    { description: 'Announces a prompt list change', inputSchema: noArgs },
    async (_a, ctx) => {
      if (isModern(ctx)) notifier()?.promptsChanged();
      else server.sendPromptListChanged();
      return text('prompt list change announced');
    },
  );
}
