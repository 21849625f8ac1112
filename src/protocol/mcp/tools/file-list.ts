import { z } from 'zod';
import { defineTool, HINTS, pathArg, sandboxArg } from '../kit/tool-kit.ts';

const DEFAULT_LIMIT = 500;
const MAX_LIMIT = 5000;

export const fileList = defineTool({
  name: 'file_list',
  title: 'List directory',
  description:
    'List a directory (tree with recursive): limit entries from offset; next_offset: more follow. truncated: too big, narrow the path.',
  annotations: HINTS.read,
  input: z.object({
    sandbox: sandboxArg,
    path: pathArg,
    recursive: z.boolean().optional().describe('List the whole tree'),
    offset: z.number().int().min(0).optional().describe('Entries to skip (default 0)'),
    limit: z
      .number()
      .int()
      .min(1)
      .max(MAX_LIMIT)
      .optional()
      .describe(`Entries at most (default ${DEFAULT_LIMIT})`),
  }),
  output: z.object({
    path: z.string(),
    entries: z.array(
      z.object({
        path: z.string(),
        type: z.string(),
        size: z.number(),
        mode: z.string(),
        mtime: z.string(),
      }),
    ),
    total: z.number(),
    next_offset: z.number().nullable(),
    truncated: z.boolean(),
  }),
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    const r = await api.listFiles(id, a.path, a.recursive === undefined ? {} : { recursive: a.recursive });
    const offset = a.offset ?? 0;
    const end = offset + (a.limit ?? DEFAULT_LIMIT);
    return {
      structured: {
        path: a.path,
        entries: r.entries.slice(offset, end).map((e) => ({
          path: e.path,
          type: e.type,
          size: e.size,
          mode: e.mode.toString(8).padStart(3, '0'),
          mtime: new Date(e.mtimeMs).toISOString(),
        })),
        total: r.entries.length,
        next_offset: end < r.entries.length ? end : null,
        truncated: r.truncated,
      },
    };
  },
});
