import { z } from 'zod';
import { execOut, execShape } from '../kit/shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../kit/tool-kit.ts';

export const execCancel = defineTool({
  name: 'exec_cancel',
  title: 'Cancel command',
  description: 'Kill a command and its process tree, or what an ended one left running (leftovers).',
  annotations: HINTS.destroy,
  input: z.object({ sandbox: sandboxArg, exec_id: z.string().min(1).max(64).describe('From exec_start') }),
  output: execShape,
  async run(a, { api, sandbox }) {
    return { structured: execOut(await api.cancelExec(await sandbox(a.sandbox), a.exec_id)) };
  },
});
