/** Input pieces shared by exec_run and exec_start, and their mapping to an ExecRequest. */
import { z } from 'zod';
import { errors } from '../../domain/errors.ts';
import { LIMITS, SIZES } from '../../domain/limits.ts';
import type { ExecRequest } from '../../service/api.ts';
import { boundedNumber, pathSchema } from '../bounds.ts';
import { envArg } from './tool-kit.ts';

/** Per stream: small enough that a result stays far under MCP clients' message limits (a few MiB). */
export const DEFAULT_MCP_OUTPUT_BYTES = 128 * 1024;

export const commandArgs = {
  command: z
    .string()
    .min(1)
    .max(SIZES.cmdChars)
    .optional()
    .describe('A shell command line, run with /bin/sh -c. Give this or `argv`.'),
  argv: z
    .array(z.string().max(SIZES.argChars))
    .min(1)
    .max(SIZES.argvEntries)
    .optional()
    .describe('The program and its arguments, run without a shell. Give this or `command`.'),
  cwd: pathSchema().optional().describe('Working directory (default /).'),
  env: envArg.describe('Extra environment variables for this command.'),
  max_output_bytes: boundedNumber(LIMITS.maxOutputBytes)
    .optional()
    .describe(
      `Output returned per stream (stdout and stderr each): its start and its end; the middle is replaced by a marker line naming a file in the sandbox that holds the whole stream, and truncated=true (default ${DEFAULT_MCP_OUTPUT_BYTES}).`,
    ),
};

export interface CommandArgs {
  command?: string | undefined;
  argv?: string[] | undefined;
  cwd?: string | undefined;
  env?: Record<string, string> | undefined;
  max_output_bytes?: number | undefined;
}

export function toExecRequest(a: CommandArgs, timeoutS: number | undefined): Omit<ExecRequest, 'stdin'> {
  if ((a.command === undefined) === (a.argv === undefined)) {
    throw errors.invalid('give exactly one of `command` (a shell line) or `argv` (a list of words).');
  }
  const req: Omit<ExecRequest, 'stdin'> = a.argv !== undefined ? { argv: a.argv } : { cmd: a.command ?? '' };
  if (a.cwd !== undefined) req.cwd = a.cwd;
  if (a.env !== undefined) req.env = a.env;
  if (timeoutS !== undefined) req.timeoutSeconds = timeoutS;
  req.maxOutputBytes = a.max_output_bytes ?? DEFAULT_MCP_OUTPUT_BYTES;
  return req;
}
