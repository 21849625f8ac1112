import { z } from 'zod';
import { sandboxOut, sandboxShape } from '../shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../tool-kit.ts';

export const sandboxPause = defineTool({
  name: 'sandbox_pause',
  title: 'Pause a sandbox',
  description:
    'Freeze every process of a sandbox (memory and REPL state kept, no CPU used). Commands and file tools fail until sandbox_resume.',
  annotations: HINTS.write,
  input: z.object({ sandbox: sandboxArg }),
  output: sandboxShape,
  async run(a, { api, sandbox }) {
    return { structured: sandboxOut(await api.pauseSandbox(await sandbox(a.sandbox))) };
  },
});
