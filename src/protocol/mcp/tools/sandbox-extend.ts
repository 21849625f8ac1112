import { z } from 'zod';
import { sandboxBrief, sandboxBriefShape } from '../shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../tool-kit.ts';

export const sandboxExtend = defineTool({
  name: 'sandbox_extend',
  title: 'Extend a TTL',
  description: 'Make a sandbox expire ttl_s seconds from now.',
  annotations: HINTS.write,
  input: z.object({
    sandbox: sandboxArg,
    ttl_s: z
      .number()
      .int()
      .min(1)
      .max(30 * 24 * 3600)
      .describe('Seconds from now'),
  }),
  output: sandboxBriefShape,
  async run(a, { api, sandbox }) {
    return { structured: sandboxBrief(await api.extendSandbox(await sandbox(a.sandbox), a.ttl_s)) };
  },
});
