import { z } from 'zod';
import { SIZES } from '../../../domain/limits.ts';
import { checkIfMatch, etagOf } from '../etag.ts';
import { defineTool, HINTS, pathArg, sandboxArg } from '../tool-kit.ts';

export const fileWrite = defineTool({
  name: 'file_write',
  title: 'Write a file',
  description:
    'Create or replace a file in a sandbox with `content` (utf8 text, or base64 with encoding=base64; max 64 MiB). create_dirs makes missing parent directories. With if_match (an etag from file_read/file_stat/file_write), the write is refused if the file changed since. Returns the new etag.',
  annotations: HINTS.write,
  input: z.object({
    sandbox: sandboxArg,
    path: pathArg,
    // The largest file of one write, as base64 (utf8 text is shorter).
    content: z.string().max(Math.ceil(SIZES.fileBytes / 3) * 4),
    encoding: z.enum(['utf8', 'base64']).optional().describe('Default utf8.'),
    mode: z
      .string()
      .regex(/^0?[0-7]{3}$/)
      .optional()
      .describe("Permission bits in octal, e.g. '755' (default 644 for new files)."),
    create_dirs: z.boolean().optional().describe('Create missing parent directories.'),
    if_match: z.string().min(1).max(128).optional().describe('Only write if the file still has this etag.'),
  }),
  output: z.object({ path: z.string(), size: z.number(), etag: z.string() }),
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    const data = Buffer.from(a.content, a.encoding === 'base64' ? 'base64' : 'utf8');
    await checkIfMatch(api, id, a.path, a.if_match);
    const opts: { mode?: number; createDirs?: boolean } = {};
    if (a.mode !== undefined) opts.mode = Number.parseInt(a.mode, 8);
    if (a.create_dirs !== undefined) opts.createDirs = a.create_dirs;
    const r = await api.writeFile(id, a.path, data, opts);
    return { structured: { path: a.path, size: r.size, etag: etagOf(data) } };
  },
});
