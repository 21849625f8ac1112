import { z } from 'zod';
import { commandArgs, timeoutArg, toExecRequest } from '../kit/exec-args.ts';
import { execOut, execShape } from '../kit/shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../kit/tool-kit.ts';

export const execStart = defineTool({
  name: 'exec_start',
  title: 'Start command',
  description:
    'Start a command in the background; returns exec_id at once. Outlives this call and your session: for servers and long work. Then exec_poll, exec_write_stdin (stdin: true), exec_cancel.',
  annotations: HINTS.run,
  input: z.object({
    sandbox: sandboxArg,
    ...commandArgs,
    stdin: z.boolean().optional().describe('Keep stdin open for exec_write_stdin'),
    timeout_s: timeoutArg('default none'),
    idempotency_key: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe('Same key again: the first exec, no new run'),
  }),
  output: execShape,
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    const req = {
      ...toExecRequest(a, a.timeout_s, undefined),
      stdin: a.stdin === true,
      ...(a.idempotency_key === undefined ? {} : { idempotencyKey: a.idempotency_key }),
    };
    return { structured: execOut(await api.startExec(id, req)) };
  },
});
