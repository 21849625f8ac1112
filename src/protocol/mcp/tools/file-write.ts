import { z } from 'zod';
import { isForkboxError } from '../../../domain/errors.ts';
import { SIZES } from '../../../domain/limits.ts';
import type { FileWriteOptions } from '../../../service/ports.ts';
import { toolFailure } from '../kit/errors.ts';
import { defineTool, HINTS, pathArg, sandboxArg } from '../kit/tool-kit.ts';

export const fileWrite = defineTool({
  name: 'file_write',
  title: 'Write file',
  description: `Create or replace a file; ≤${SIZES.mcpFileBytes} bytes per call, bigger in append chunks. if_match: refused if its etag changed.`,
  annotations: HINTS.write,
  input: z.object({
    sandbox: sandboxArg,
    path: pathArg,
    // One chunk, as base64 (utf8 text is shorter).
    content: z
      .string()
      .max(Math.ceil(SIZES.mcpFileBytes / 3) * 4)
      .describe('File content'),
    encoding: z.enum(['utf8', 'base64']).optional().describe('Default utf8'),
    mode: z
      .string()
      .regex(/^0?[0-7]{3}$/)
      .optional()
      .describe('Octal, e.g. 755 (new: 644)'),
    create_dirs: z.boolean().optional().describe('Create missing parents'),
    append: z.boolean().optional().describe('Add to the end'),
    offset: z.number().int().min(0).optional().describe('Write in place here (≤ size)'),
    if_match: z.string().min(1).max(128).optional().describe('Etag it must have'),
  }),
  output: z.object({ path: z.string(), size: z.number(), etag: z.string() }),
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    const data = Buffer.from(a.content, a.encoding === 'base64' ? 'base64' : 'utf8');
    if (data.length > SIZES.mcpFileBytes) {
      toolFailure(
        'too_large',
        `content is ${data.length} bytes, over ${SIZES.mcpFileBytes} per call. Send the first ${SIZES.mcpFileBytes} bytes, then the rest in calls with append: true.`,
      );
    }
    const opts: FileWriteOptions = {};
    if (a.mode !== undefined) opts.mode = Number.parseInt(a.mode, 8);
    if (a.create_dirs !== undefined) opts.createDirs = a.create_dirs;
    if (a.append !== undefined) opts.append = a.append;
    if (a.offset !== undefined) opts.offset = a.offset;
    if (a.if_match !== undefined) opts.ifMatch = a.if_match;
    // The etag check and the write are one agent operation: of concurrent writes with one etag, one wins.
    const r = await api.writeFile(id, a.path, data, opts).catch((e: unknown) => {
      if (isForkboxError(e) && e.code === 'conflict')
        toolFailure('conflict', `${e.message}. Re-read it with file_read.`);
      throw e;
    });
    return { structured: { path: a.path, size: r.size, etag: r.etag } };
  },
});
