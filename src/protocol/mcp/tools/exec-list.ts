import { z } from 'zod';
import { execOut, execShape } from '../kit/shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../kit/tool-kit.ts';

export const execList = defineTool({
  name: 'exec_list',
  title: 'List commands',
  description: "A sandbox's last 100 commands, newest first, with state and exit code.",
  annotations: HINTS.read,
  input: z.object({ sandbox: sandboxArg }),
  output: z.object({ execs: z.array(execShape) }),
  async run(a, { api, sandbox }) {
    return { structured: { execs: (await api.listExecs(await sandbox(a.sandbox))).map(execOut) } };
  },
});
