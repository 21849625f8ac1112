import { z } from 'zod';
import { sandboxBrief, sandboxBriefShape } from '../kit/shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../kit/tool-kit.ts';

export const sandboxKill = defineTool({
  name: 'sandbox_kill',
  title: 'Kill sandbox',
  description: 'Kill a sandbox, deleting its files and REPL state. Its forks live on unless cascade.',
  annotations: HINTS.destroy,
  input: z.object({
    sandbox: sandboxArg,
    cascade: z.boolean().optional().describe('Also kill its forks'),
  }),
  output: sandboxBriefShape,
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    return { structured: sandboxBrief(await api.killSandbox(id, a.cascade ? { cascade: true } : {})) };
  },
});
