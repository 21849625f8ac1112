import { z } from 'zod';
import { execOut, execShape } from '../shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../tool-kit.ts';

export const execCancel = defineTool({
  name: 'exec_cancel',
  title: 'Cancel a command',
  description:
    'Kill a running command and every process it started (whatever their process group); returns its final record. On an ended command, kills the processes it left running (`leftovers`).',
  annotations: HINTS.destroy,
  input: z.object({ sandbox: sandboxArg, exec_id: z.string().min(1).max(64) }),
  output: execShape,
  async run(a, { api, sandbox }) {
    return { structured: execOut(await api.cancelExec(await sandbox(a.sandbox), a.exec_id)) };
  },
});
