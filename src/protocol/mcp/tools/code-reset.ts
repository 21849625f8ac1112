import { z } from 'zod';
import { defineTool, HINTS, sandboxArg } from '../tool-kit.ts';

export const codeReset = defineTool({
  name: 'code_reset',
  title: 'Reset the Python REPL',
  description:
    "Restart a sandbox's Python REPL: all variables, imports and REPL-started threads are lost. Files and other processes are kept.",
  annotations: HINTS.destroy,
  input: z.object({ sandbox: sandboxArg }),
  output: z.object({ reset: z.boolean() }),
  async run(a, { api, sandbox }) {
    await api.resetCode(await sandbox(a.sandbox));
    return { structured: { reset: true } };
  },
});
