/** Input pieces shared by exec_run and exec_start, and their mapping to an ExecRequest. */
import { z } from 'zod';
import { errors } from '../../../domain/errors.ts';
import { LIMITS, SIZES } from '../../../domain/limits.ts';
import type { ExecRequest } from '../../../service/api.ts';
import { boundedNumber, pathSchema } from '../../bounds.ts';
import { envArg } from './kv-list.ts';

/** Inline output per stream when neither the call nor the daemon says: a model's context is small. */
export const DEFAULT_MCP_OUTPUT_BYTES = 32 * 1024;
/** Most inline output per stream one call may ask for (results stay a few MiB: tool-result.ts). */
export const MAX_MCP_OUTPUT_BYTES = LIMITS.mcpOutputBytes.max;

export const maxOutputArg = boundedNumber(LIMITS.mcpOutputBytes)
  .optional()
  .describe(`Inline bytes per stream (default ${DEFAULT_MCP_OUTPUT_BYTES})`);

export const timeoutArg = (dflt: string) =>
  boundedNumber(LIMITS.timeoutSeconds).optional().describe(`Seconds until killed (${dflt})`);

export const commandArgs = {
  command: z.string().min(1).max(SIZES.cmdChars).optional().describe('Shell line (sh -c)'),
  argv: z
    .array(z.string().max(SIZES.argChars))
    .min(1)
    .max(SIZES.argvEntries)
    .optional()
    .describe('Or: argv, no shell'),
  cwd: pathSchema().optional().describe('Working directory (default /)'),
  env: envArg.optional().describe('NAME=value'),
  max_output_bytes: maxOutputArg,
};

export interface CommandArgs {
  command?: string | undefined;
  argv?: string[] | undefined;
  cwd?: string | undefined;
  env?: Record<string, string> | undefined;
  max_output_bytes?: number | undefined;
}

export function toExecRequest(
  a: CommandArgs,
  timeoutS: number | undefined,
  /** Per-stream inline default; undefined: the daemon's (background execs keep more for polling). */
  outputBytes: number | undefined,
): Omit<ExecRequest, 'stdin'> {
  if ((a.command === undefined) === (a.argv === undefined)) {
    throw errors.invalid('give exactly one of `command` (a shell line) or `argv` (a list of words).');
  }
  const req: Omit<ExecRequest, 'stdin'> = a.argv !== undefined ? { argv: a.argv } : { cmd: a.command ?? '' };
  if (a.cwd !== undefined) req.cwd = a.cwd;
  if (a.env !== undefined) req.env = a.env;
  if (timeoutS !== undefined) req.timeoutSeconds = timeoutS;
  const max = a.max_output_bytes ?? outputBytes;
  if (max !== undefined) req.maxOutputBytes = max;
  return req;
}
