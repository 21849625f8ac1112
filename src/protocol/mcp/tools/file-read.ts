import { isUtf8 } from 'node:buffer';
import { z } from 'zod';
import { SIZES } from '../../../domain/limits.ts';
import { defineTool, HINTS, pathArg, sandboxArg } from '../kit/tool-kit.ts';

const DEFAULT_LENGTH = 256 * 1024;

/**
 * Bytes of `data` that end on a whole UTF-8 character when only a cut-off last character makes it
 * invalid (a page boundary inside a character): the next page starts at offset + that length.
 */
function utf8Prefix(data: Buffer): number {
  if (isUtf8(data)) return data.length;
  for (let cut = 1; cut <= 3 && cut < data.length; cut++) {
    if (isUtf8(data.subarray(0, data.length - cut))) return data.length - cut;
  }
  return -1;
}

export const fileRead = defineTool({
  name: 'file_read',
  title: 'Read file',
  description: `Read length bytes (≤${SIZES.mcpFileBytes}) from offset; truncated: more at offset+bytes. Binary: base64 (see encoding). etag: for if_match.`,
  annotations: HINTS.read,
  bulk: ['content'],
  input: z.object({
    sandbox: sandboxArg,
    path: pathArg,
    offset: z.number().int().min(0).optional().describe('Default 0'),
    length: z
      .number()
      .int()
      .min(1)
      .max(SIZES.mcpFileBytes)
      .optional()
      .describe(`Bytes (default ${DEFAULT_LENGTH})`),
    encoding: z.enum(['utf8', 'base64']).optional().describe('Force one'),
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
    // One agent operation: the page and the ETag of the whole file as it was when opened.
    const part = await api.readFile(id, a.path, { offset, length: a.length ?? DEFAULT_LENGTH });
    let data = part.data;
    let encoding = a.encoding;
    if (encoding === undefined) {
      const n = utf8Prefix(data);
      if (n > 0 || data.length === 0) {
        data = data.subarray(0, Math.max(n, 0));
        encoding = 'utf8';
      } else encoding = 'base64'; // binary: say so rather than mangle it
    }
    return {
      structured: {
        path: a.path,
        content: data.toString(encoding),
        encoding,
        offset,
        bytes: data.length,
        size: part.size,
        truncated: offset + data.length < part.size,
        etag: part.etag,
      },
    };
  },
});
