import { z } from 'zod';
import { defineTool, HINTS, pathArg, sandboxArg } from '../tool-kit.ts';

export const fileList = defineTool({
  name: 'file_list',
  title: 'List a directory',
  description:
    'List the entries of a directory in a sandbox (name, type file|dir|symlink|other, size, octal mode, mtime); recursive lists the whole tree. A long listing is cut (truncated=true): list a narrower path.',
  annotations: HINTS.read,
  input: z.object({
    sandbox: sandboxArg,
    path: pathArg,
    recursive: z.boolean().optional(),
  }),
  output: z.object({
    path: z.string(),
    entries: z.array(
      z.object({
        path: z.string(),
        name: z.string(),
        type: z.string(),
        size: z.number(),
        mode: z.string(),
        mtime: z.string(),
      }),
    ),
    truncated: z.boolean(),
  }),
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    const r = await api.listFiles(id, a.path, a.recursive === undefined ? {} : { recursive: a.recursive });
    return {
      structured: {
        path: a.path,
        entries: r.entries.map((e) => ({
          path: e.path,
          name: e.name,
          type: e.type,
          size: e.size,
          mode: e.mode.toString(8).padStart(3, '0'),
          mtime: new Date(e.mtimeMs).toISOString(),
        })),
        truncated: r.truncated,
      },
    };
  },
});
