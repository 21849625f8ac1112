import { z } from 'zod';
import { sandboxBrief, sandboxBriefShape } from '../kit/shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../kit/tool-kit.ts';

export const sandboxResume = defineTool({
  name: 'sandbox_resume',
  title: 'Resume sandbox',
  description: 'Thaw a paused sandbox.',
  annotations: HINTS.write,
  input: z.object({ sandbox: sandboxArg }),
  output: sandboxBriefShape,
  async run(a, { api, sandbox }) {
    return { structured: sandboxBrief(await api.resumeSandbox(await sandbox(a.sandbox))) };
  },
});
