/**
 * What every MCP tool is made of: a definition (name, title, description, annotations, zod input and
 * output schemas) and a `run` that returns structured output. `registerTool` in server.ts turns a run
 * into the MCP result (structuredContent + a text copy), and errors into isError results.
 */
import { z } from 'zod';
import type { Logger } from '../../domain/logger.ts';
import type { ForkboxApi } from '../../service/api.ts';
import { envSchema, pathSchema, refSchema } from '../bounds.ts';

/** The annotations every tool sets explicitly (the spec's defaults are not what most of ours need). */
export interface ToolHints {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export type ExtraContent = { type: 'image'; data: string; mimeType: string } | { type: 'text'; text: string };

export interface ToolOutput<O> {
  structured: O;
  /** Content blocks after the JSON text copy (e.g. matplotlib images). */
  extra?: ExtraContent[];
  /** A business-level failure the model should see as a tool error (the structured part is still sent). */
  isError?: boolean;
}

export type ToolLog = Pick<Logger, 'debug' | 'warn'>;

export interface ToolContext {
  api: ForkboxApi;
  /** The sandbox a per-sandbox tool acts on: `arg` when given, else this connection's default one. */
  sandbox(arg: string | undefined): Promise<string>;
  /** Aborted when the client cancels the request or disconnects. */
  signal: AbortSignal;
  /** Report progress (a no-op when the request carries no progressToken). Ordered; awaited before the result. */
  progress(message: string): void;
  log: ToolLog;
}

export interface ToolDef<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  annotations: ToolHints;
  input: I;
  output: O;
  run(args: z.output<I>, ctx: ToolContext): Promise<ToolOutput<z.input<O>>>;
}

/** Erase a tool's precise types so tools of different shapes fit in one toolset list. */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(def: ToolDef<I, O>): ToolDef {
  return def as unknown as ToolDef;
}

// ───────────── shared schema pieces ─────────────

export const SANDBOX_ARG_DESCRIPTION =
  "Sandbox id or name. Omit it to use this connection's default sandbox (one per stdio connection, HTTP session or token), created on first use and re-created if it was killed.";

export const sandboxArg = refSchema().optional().describe(SANDBOX_ARG_DESCRIPTION);

export const pathArg = pathSchema().describe(
  'Absolute path inside the sandbox (relative paths are resolved from /).',
);

export const envArg = envSchema().optional();

export const diskMbArg = z.number().int().min(16).max(1_073_741_824).optional();

export const diskInodesArg = z
  .number()
  .int()
  .min(1000)
  .max(4_000_000_000)
  .optional()
  .describe('Limit on files, directories and other inodes it may create (default 1000000).');

export const HINTS = {
  read: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  /** Changes state inside a sandbox; repeating it gives the same result. */
  write: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  /** Creates something new each call. */
  create: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  /** Runs arbitrary code: may destroy data in the sandbox and has effects that differ per call. */
  run: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  destroy: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
} as const satisfies Record<string, ToolHints>;
