/**
 * Registers one ToolDef on an McpServer, the same way for every tool:
 *
 * - tools/list shows the portable input schema (portable-schema.ts) and the output schema without the
 *   bulk fields;
 * - tools/call pre-parses the arguments (tool-args.ts; the SDK's own validation is a pass-through so the
 *   errors are ours), runs the tool with a progress heartbeat (progress.ts) and the request's abort
 *   signal, and shapes the result (tool-result.ts). Every failure is an isError result (errors.ts).
 */
import type {
  CallToolResult,
  McpServer,
  ServerContext,
  StandardSchemaWithJSON,
} from '@modelcontextprotocol/server';
import type { z } from 'zod';
import { toolError } from './errors.ts';
import { advertisedOutputSchema, type JsonSchema, portableInputSchema } from './portable-schema.ts';
import { startProgress } from './progress.ts';
import { createArgParser } from './tool-args.ts';
import { advertisedHints, type ToolContext, type ToolDef } from './tool-kit.ts';
import { buildToolResult, MAX_RESULT_BYTES } from './tool-result.ts';

export interface RunnerOptions {
  /** Heartbeat period of progress notifications (ms). */
  progressIntervalMs?: number;
  /** A call's first milliseconds without state notifications (progress.ts; tests set 0). */
  progressQuietMs?: number;
  /** Bound on one result's JSON (bytes). */
  maxResultBytes?: number;
  /** Told of every call in flight (settles when the call has ended, cancelled or not). */
  inflight?: CallTracker;
}

/** The tool calls in flight, so a closing transport can let cancelled calls finish cancelling. */
export interface CallTracker {
  add(call: Promise<unknown>): void;
  /** Resolves when every call added so far has settled, or after `timeoutMs`. */
  settled(timeoutMs: number): Promise<void>;
}

export function createCallTracker(): CallTracker {
  const calls = new Set<Promise<unknown>>();
  return {
    add(call) {
      const p = call.catch(() => undefined).finally(() => calls.delete(p));
      calls.add(p);
    },
    async settled(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...calls]),
        new Promise((r) => {
          timer = setTimeout(r, timeoutMs);
          timer.unref?.();
        }),
      ]);
      if (timer) clearTimeout(timer);
    },
  };
}

/** What every tool of a server shares: the API, the sandbox resolver, the output default, the log. */
export type ToolBase = Omit<ToolContext, 'signal' | 'progress'>;

/** A Standard Schema that advertises `json` and validates with `check` (the SDK calls both). */
export function standardSchema(
  json: JsonSchema,
  check: (v: unknown) => { value: unknown } | { issues: { message: string }[] },
): StandardSchemaWithJSON {
  return {
    '~standard': {
      version: 1,
      vendor: 'forkbox',
      validate: check,
      jsonSchema: { input: () => json, output: () => json },
    },
  } as unknown as StandardSchemaWithJSON;
}

export function registerTool(
  server: McpServer,
  tool: ToolDef,
  base: ToolBase,
  opts: RunnerOptions = {},
): void {
  const bulk = (tool.bulk ?? []) as readonly string[];
  const omit = Object.fromEntries(bulk.map((k) => [k, true as const])) as Record<string, true>;
  const outputShape: z.ZodObject = bulk.length > 0 ? tool.output.omit(omit as never) : tool.output;
  const args = createArgParser(tool.name, tool.input);
  const inputSchema = standardSchema(portableInputSchema(tool.input), (value) => ({ value }));
  const outputSchema = standardSchema(advertisedOutputSchema(outputShape), (value) => {
    const r = outputShape.safeParse(value);
    return r.success ? { value: r.data } : { issues: r.error.issues.map((i) => ({ message: i.message })) };
  });
  server.registerTool(
    tool.name,
    {
      title: tool.title,
      description: tool.description,
      inputSchema,
      outputSchema,
      annotations: advertisedHints(tool.annotations),
    },
    (raw: unknown, ctx: ServerContext): Promise<CallToolResult> => {
      const call = runCall(raw, ctx);
      opts.inflight?.add(call);
      return call;
    },
  );

  async function runCall(raw: unknown, ctx: ServerContext): Promise<CallToolResult> {
    const progress = startProgress(ctx, tool.name, base.log, opts.progressIntervalMs, opts.progressQuietMs);
    try {
      const out = await tool.run(args.parse(raw) as never, {
        ...base,
        signal: ctx.mcpReq.signal,
        progress: progress.update,
      });
      await progress.stop();
      return buildToolResult(
        out as Parameters<typeof buildToolResult>[0],
        bulk,
        opts.maxResultBytes ?? MAX_RESULT_BYTES,
      );
    } catch (e) {
      await progress.stop();
      base.log.debug({ tool: tool.name, err: (e as Error).message }, 'tool failed');
      return toolError(e);
    }
  }
}
