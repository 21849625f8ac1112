import { z } from 'zod';
import { sandboxOut, sandboxWithUsageShape } from '../kit/shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../kit/tool-kit.ts';

export const sandboxGet = defineTool({
  name: 'sandbox_get',
  title: 'Inspect sandbox',
  description: 'One sandbox: state, limits, expiry, usage (memory, CPU, processes, disk, OOM kills).',
  annotations: HINTS.read,
  input: z.object({ sandbox: sandboxArg }),
  output: sandboxWithUsageShape,
  async run(a, { api, sandbox }) {
    const s = await api.getSandbox(await sandbox(a.sandbox), { usage: true });
    return { structured: { ...sandboxOut(s), network: s.network } };
  },
});
