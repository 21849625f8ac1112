import { z } from 'zod';
import { sandboxOut, sandboxShape } from '../shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../tool-kit.ts';

export const sandboxGet = defineTool({
  name: 'sandbox_get',
  title: 'Inspect a sandbox',
  description:
    'Get one sandbox: state, limits, labels, expiry, and live usage (memory bytes, CPU ns, processes, disk bytes, OOM kills) while it runs.',
  annotations: HINTS.read,
  input: z.object({ sandbox: sandboxArg }),
  output: sandboxShape,
  async run(a, { api, sandbox }) {
    return { structured: sandboxOut(await api.getSandbox(await sandbox(a.sandbox), { usage: true })) };
  },
});
