import { z } from 'zod';
import { sandboxOut, sandboxShape } from '../shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../tool-kit.ts';

export const sandboxResume = defineTool({
  name: 'sandbox_resume',
  title: 'Resume a sandbox',
  description: 'Thaw a paused sandbox; its processes and REPL continue where they stopped.',
  annotations: HINTS.write,
  input: z.object({ sandbox: sandboxArg }),
  output: sandboxShape,
  async run(a, { api, sandbox }) {
    return { structured: sandboxOut(await api.resumeSandbox(await sandbox(a.sandbox))) };
  },
});
