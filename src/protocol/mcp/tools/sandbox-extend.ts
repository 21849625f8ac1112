import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';
import { boundedNumber } from '../../bounds.ts';
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
    ttl_s: boundedNumber(LIMITS.ttlSeconds).describe('Seconds from now until the sandbox is reaped.'),
  }),
  output: sandboxShape,
  async run(a, { api, sandbox }) {
    return { structured: sandboxOut(await api.extendSandbox(await sandbox(a.sandbox), a.ttl_s)) };
  },
});
