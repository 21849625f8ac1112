/**
 * Tools of compatibility toolsets: another system's tool, as that system's MCP server advertised and
 * answered it, run over ForkboxApi.
 *
 * - tools/list: the portable input schema with the system's defaults kept (portable-schema.ts); no
 *   output schema (none of the replaced systems published one for these tools).
 * - Results: the systems returned raw JSON values (dicts, lists, strings). Each becomes ONE text block —
 *   a string as itself (as both FastMCP and the TypeScript SDK servers sent a returned string), any
 *   other value as its JSON — and, only when the value is a JSON object, the same object as
 *   structuredContent (MCP's structuredContent must be an object; a list is not wrapped, so a client
 *   that parses the text block gets exactly the value the system returned).
 * - Errors: the toolset's convention (its `errorText`), as an `isError` result; argument errors too.
 * - Bounds: what a tool returns is bounded by its inputs (inline output per stream, file chunk sizes);
 *   a result over the server's result bound is refused as `too_large` rather than cut (cut JSON is
 *   not JSON).
 */
import type { CallToolResult, McpServer, ServerContext } from '@modelcontextprotocol/server';
import type { z } from 'zod';
import { ForkboxError, toForkboxError } from '../../../domain/errors.ts';
import type { ToolsetTool } from '../toolset.ts';
import { portableInputSchema } from './portable-schema.ts';
import { startProgress } from './progress.ts';
import { createArgParser } from './tool-args.ts';
import { advertisedHints, type ToolContext, type ToolHints } from './tool-kit.ts';
import { MAX_RESULT_BYTES } from './tool-result.ts';
import { type RunnerOptions, standardSchema, type ToolBase } from './tool-runner.ts';

/** How a toolset words its errors: the text of the isError result for a failure of `tool`. */
export type ErrorText = (tool: string, err: ForkboxError) => string;

export interface CompatToolDef<I extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  annotations: ToolHints;
  input: I;
  /** The system's result value (any JSON). */
  run(args: z.output<I>, ctx: ToolContext): Promise<unknown>;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A raw JSON value as a tool result (see the header). */
export function jsonResult(value: unknown): CallToolResult {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? null);
  return {
    content: [{ type: 'text', text }],
    ...(isObject(value) ? { structuredContent: value } : {}),
  };
}

export function errorResult(tool: string, e: unknown, errorText: ErrorText): CallToolResult {
  return { content: [{ type: 'text', text: errorText(tool, toForkboxError(e)) }], isError: true };
}

export function compatTool<I extends z.ZodObject>(def: CompatToolDef<I>, errorText: ErrorText): ToolsetTool {
  return {
    name: def.name,
    register(server: McpServer, base: ToolBase, opts: RunnerOptions = {}) {
      const args = createArgParser(def.name, def.input);
      const inputSchema = standardSchema(portableInputSchema(def.input, { defaults: true }), (value) => ({
        value,
      }));
      const max = opts.maxResultBytes ?? MAX_RESULT_BYTES;
      async function runCall(raw: unknown, ctx: ServerContext): Promise<CallToolResult> {
        const progress = startProgress(
          ctx,
          def.name,
          base.log,
          opts.progressIntervalMs,
          opts.progressQuietMs,
        );
        try {
          const value = await def.run(args.parse(raw) as z.output<I>, {
            ...base,
            signal: ctx.mcpReq.signal,
            progress: progress.update,
          });
          await progress.stop();
          const result = jsonResult(value);
          const size = Buffer.byteLength(JSON.stringify(result), 'utf8');
          if (size > max) {
            const why = `the result is ${size} bytes, over this server's bound of ${max}: ask for less (a smaller file part or output).`;
            return errorResult(def.name, new ForkboxError('too_large', why), errorText);
          }
          return result;
        } catch (e) {
          await progress.stop();
          base.log.debug({ tool: def.name, err: (e as Error).message }, 'tool failed');
          return errorResult(def.name, e, errorText);
        }
      }
      server.registerTool(
        def.name,
        {
          title: def.title,
          description: def.description,
          inputSchema,
          annotations: advertisedHints(def.annotations),
        },
        (raw: unknown, ctx: ServerContext): Promise<CallToolResult> => {
          const call = runCall(raw, ctx);
          opts.inflight?.add(call);
          return call;
        },
      );
    },
  };
}
