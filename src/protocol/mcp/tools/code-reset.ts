import { z } from 'zod';
import { defineTool, HINTS, sandboxArg } from '../kit/tool-kit.ts';

export const codeReset = defineTool({
  name: 'code_reset',
  title: 'Reset REPL',
  description:
    "Restart a sandbox's Python REPL, losing its variables and imports (files and processes stay).",
  annotations: HINTS.destroy,
  input: z.object({ sandbox: sandboxArg }),
  output: z.object({ reset: z.boolean() }),
  async run(a, { api, sandbox }) {
    await api.resetCode(await sandbox(a.sandbox));
    return { structured: { reset: true } };
  },
});
