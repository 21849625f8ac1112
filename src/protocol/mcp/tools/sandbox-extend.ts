import { z } from 'zod';
import { sandboxOut, sandboxShape } from '../shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../tool-kit.ts';

export const sandboxExtend = defineTool({
  name: 'sandbox_extend',
  title: 'Extend a sandbox TTL',
  description:
    'Set a sandbox to expire `ttl_s` seconds from now (at most 30 days). Returns its new expires_at.',
  annotations: HINTS.write,
  input: z.object({
    sandbox: sandboxArg,
    ttl_s: z
      .number()
      .int()
      .min(1)
      .max(30 * 24 * 3600)
      .describe('Seconds from now until the sandbox is reaped.'),
  }),
  output: sandboxShape,
  async run(a, { api, sandbox }) {
    return { structured: sandboxOut(await api.extendSandbox(await sandbox(a.sandbox), a.ttl_s)) };
  },
});
