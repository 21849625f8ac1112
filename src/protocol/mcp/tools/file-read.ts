import { z } from 'zod';
import { etagOf } from '../etag.ts';
import { defineTool, HINTS, pathArg, sandboxArg } from '../tool-kit.ts';

const DEFAULT_LENGTH = 256 * 1024;
/** One page at most: results stay well under every client's message limit (read big files in pages). */
const MAX_LENGTH = 1024 * 1024;

export const fileRead = defineTool({
  name: 'file_read',
  title: 'Read a file',
  description:
    'Read a file: length bytes from offset, utf8 or base64. truncated: more at offset+bytes (page big files, e.g. a streams.stdout.file). etag: pass as if_match to write safely.',
  annotations: HINTS.read,
  bulk: ['content'],
  input: z.object({
    sandbox: sandboxArg,
    path: pathArg,
    offset: z.number().int().min(0).optional().describe('Byte offset (default 0)'),
    length: z.number().int().min(1).max(MAX_LENGTH).optional().describe('Bytes to read'),
    encoding: z.enum(['utf8', 'base64']).optional().describe('Default utf8'),
  }),
  output: z.object({
    path: z.string(),
    content: z.string(),
    encoding: z.enum(['utf8', 'base64']),
    offset: z.number(),
    bytes: z.number(),
    size: z.number(),
    truncated: z.boolean(),
    etag: z.string(),
  }),
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    const offset = a.offset ?? 0;
    const length = a.length ?? DEFAULT_LENGTH;
    const part = await api.readFile(id, a.path, { offset, length });
    const whole = offset === 0 && part.data.length === part.size;
    // The etag is of the whole file, so a partial read costs one more read of it.
    const etag = etagOf(whole ? part.data : (await api.readFile(id, a.path)).data);
    const encoding = a.encoding ?? 'utf8';
    return {
      structured: {
        path: a.path,
        content: part.data.toString(encoding),
        encoding,
        offset,
        bytes: part.data.length,
        size: part.size,
        truncated: offset + part.data.length < part.size,
        etag,
      },
    };
  },
});
