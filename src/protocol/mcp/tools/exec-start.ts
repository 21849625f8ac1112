import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';
import { boundedNumber } from '../../bounds.ts';
import { commandArgs, toExecRequest } from '../exec-args.ts';
import { execOut, execShape } from '../shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../tool-kit.ts';

export const execStart = defineTool({
  name: 'exec_start',
  title: 'Start a background command',
  description:
    'Start a command in the background and return its exec_id at once. Read its latest output with exec_poll (long-poll with wait_ms), feed stdin with exec_write_stdin (when `stdin` is true), stop it and every process it started with exec_cancel. The latest 2×max_output_bytes of output are kept for polling; the whole output is in files in the sandbox. No timeout unless timeout_s is given.',
  annotations: HINTS.run,
  input: z.object({
    sandbox: sandboxArg,
    ...commandArgs,
    stdin: z.boolean().optional().describe('Keep stdin open for exec_write_stdin (default: stdin is empty).'),
    timeout_s: boundedNumber(LIMITS.timeoutSeconds)
      .optional()
      .describe('Kill the command after this many seconds.'),
    idempotency_key: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe(
        'Any unique string: a retried call with the same key returns the first exec instead of starting another.',
      ),
  }),
  output: execShape,
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    const req = {
      ...toExecRequest(a, a.timeout_s),
      stdin: a.stdin === true,
      ...(a.idempotency_key === undefined ? {} : { idempotencyKey: a.idempotency_key }),
    };
    return { structured: execOut(await api.startExec(id, req)) };
  },
});
