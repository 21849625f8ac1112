/**
 * What every MCP tool is made of: a definition (name, title, description, annotations, zod input and
 * output schemas, the output fields that are bulk text) and a `run` that returns structured output.
 * tool-runner.ts turns a run into the MCP result (tool-result.ts: structuredContent, a JSON text copy
 * of it and each bulk field once, as its own text block) and errors into isError results.
 */
import { z } from 'zod';
import type { Logger } from '../../../domain/logger.ts';
import type { ForkboxApi } from '../../../service/api.ts';
import { pathSchema, refSchema } from '../../bounds.ts';

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
  /** Content blocks after the JSON text copy and the bulk fields (e.g. matplotlib images). */
  extra?: ExtraContent[];
  /** A business-level failure the model should see as a tool error (the structured part is still sent). */
  isError?: boolean;
}

export type ToolLog = Pick<Logger, 'debug' | 'info' | 'warn'>;

export interface ToolContext {
  api: ForkboxApi;
  /** The sandbox a per-sandbox tool acts on: `arg` when given, else this connection's default one. */
  sandbox(arg: string | undefined): Promise<string>;
  /** Aborted when the client cancels the request, or its session or connection ends. */
  signal: AbortSignal;
  /**
   * The latest state of the work, for progress notifications (a no-op when the request carries no
   * progressToken): sent at once when none was sent in the last second, else with the next heartbeat.
   */
  progress(message: string): void;
  /** Inline output per stream when a call does not say (the daemon's setting). */
  outputBytes: number;
  log: ToolLog;
}

export interface ToolDef<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  annotations: ToolHints;
  input: I;
  output: O;
  /**
   * Top-level string fields of the output that can be large (stdout, file content): each is sent once,
   * as its own text content block, and left out of structuredContent and of the advertised output schema.
   */
  bulk?: readonly (keyof z.input<O> & string)[];
  /** Changes host-wide configuration: listed only to the host's own tenant (others could not use it). */
  hostOnly?: boolean;
  run(args: z.output<I>, ctx: ToolContext): Promise<ToolOutput<z.input<O>>>;
}

/** Erase a tool's precise types so tools of different shapes fit in one toolset list. */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(def: ToolDef<I, O>): ToolDef {
  return def as unknown as ToolDef;
}

// ───────────── shared schema pieces ─────────────

export const SANDBOX_ARG_DESCRIPTION = 'Default: yours';

export const sandboxArg = refSchema().optional().describe(SANDBOX_ARG_DESCRIPTION);

export const pathArg = pathSchema().describe('Absolute path');

export { envArg, labelsArg } from './kv-list.ts';

/** The spec's values for hints a tool does not state. */
export const SPEC_DEFAULT_HINTS: ToolHints = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: true,
};

/**
 * The hints as advertised: only those that differ from the spec's defaults (destructive and idempotent
 * only mean something for a tool that is not read-only). Clients apply the defaults, so every tool's
 * effective hints are the ones it sets; tools/list, paid on every turn, is ~450 tokens lighter.
 */
export function advertisedHints(h: ToolHints): Partial<ToolHints> {
  const out: Partial<ToolHints> = {};
  for (const k of Object.keys(SPEC_DEFAULT_HINTS) as (keyof ToolHints)[]) {
    if (h.readOnlyHint && (k === 'destructiveHint' || k === 'idempotentHint')) continue;
    if (h[k] !== SPEC_DEFAULT_HINTS[k]) out[k] = h[k];
  }
  return out;
}

export const diskMbArg = z.number().int().min(16).max(1_073_741_824).optional();

export const diskInodesArg = z
  .number()
  .int()
  .min(1000)
  .max(4_000_000_000)
  .optional()
  .describe('Inodes (default 1000000)');

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
