import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';
import { boundedNumber } from '../../bounds.ts';
import { sandboxBrief, sandboxBriefShape } from '../kit/shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../kit/tool-kit.ts';

export const sandboxExtend = defineTool({
  name: 'sandbox_extend',
  title: 'Extend TTL',
  description: 'Make a sandbox expire ttl_s seconds from now.',
  annotations: HINTS.write,
  input: z.object({
    sandbox: sandboxArg,
    ttl_s: boundedNumber(LIMITS.ttlSeconds).describe('Seconds from now'),
  }),
  output: sandboxBriefShape,
  async run(a, { api, sandbox }) {
    return { structured: sandboxBrief(await api.extendSandbox(await sandbox(a.sandbox), a.ttl_s)) };
  },
});
