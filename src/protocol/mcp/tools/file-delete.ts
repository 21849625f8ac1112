import { z } from 'zod';
import { defineTool, HINTS, pathArg, sandboxArg } from '../kit/tool-kit.ts';

export const fileDelete = defineTool({
  name: 'file_delete',
  title: 'Delete path',
  description: 'Delete a file, symlink or empty directory (a tree with recursive).',
  annotations: HINTS.destroy,
  input: z.object({
    sandbox: sandboxArg,
    path: pathArg,
    recursive: z.boolean().optional().describe('Delete a directory tree'),
  }),
  output: z.object({ path: z.string(), deleted: z.boolean() }),
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    await api.deleteFile(id, a.path, a.recursive === undefined ? {} : { recursive: a.recursive });
    return { structured: { path: a.path, deleted: true } };
  },
});
