import { z } from 'zod';
import { sandboxBrief, sandboxBriefShape } from '../kit/shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../kit/tool-kit.ts';

export const sandboxPause = defineTool({
  name: 'sandbox_pause',
  title: 'Pause sandbox',
  description: "Freeze a sandbox's processes (state kept, no CPU) until sandbox_resume.",
  annotations: HINTS.write,
  input: z.object({ sandbox: sandboxArg }),
  output: sandboxBriefShape,
  async run(a, { api, sandbox }) {
    return { structured: sandboxBrief(await api.pauseSandbox(await sandbox(a.sandbox))) };
  },
});
