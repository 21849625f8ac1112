import { z } from 'zod';
import { defineTool, pathArg, sandboxArg } from '../kit/tool-kit.ts';

export const fileMove = defineTool({
  name: 'file_move',
  title: 'Move path',
  description: 'Move or rename a file or directory; fails if `to` exists unless overwrite.',
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  input: z.object({
    sandbox: sandboxArg,
    from: pathArg,
    to: pathArg,
    overwrite: z.boolean().optional().describe('Replace an existing `to`'),
  }),
  output: z.object({ from: z.string(), to: z.string() }),
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    await api.moveFile(id, a.from, a.to, a.overwrite === undefined ? {} : { overwrite: a.overwrite });
    return { structured: { from: a.from, to: a.to } };
  },
});
