import { isUtf8 } from 'node:buffer';
import { z } from 'zod';
import { SIZES } from '../../../domain/limits.ts';
import { toolFailure } from '../kit/errors.ts';
import { defineTool, pathArg, sandboxArg } from '../kit/tool-kit.ts';

function countOccurrences(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

export const fileEdit = defineTool({
  name: 'file_edit',
  title: 'Edit file',
  description:
    'Replace the single occurrence of old_string with new_string in a text file; no change on 0 or several matches (add context) or binary.',
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  input: z.object({
    sandbox: sandboxArg,
    path: pathArg,
    old_string: z
      .string()
      .min(1)
      .max(1024 * 1024)
      .describe('Exact text to replace'),
    new_string: z
      .string()
      .max(1024 * 1024)
      .describe('Replacement'),
    if_match: z.string().min(1).max(128).optional().describe('Etag it must have'),
  }),
  output: z.object({ path: z.string(), size: z.number(), etag: z.string(), replacements: z.number() }),
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    const [file, stat] = await Promise.all([
      api.readFile(id, a.path, { length: SIZES.fileBytes }),
      api.statFile(id, a.path),
    ]);
    if (a.if_match !== undefined && a.if_match !== file.etag) {
      toolFailure(
        'conflict',
        `${a.path} changed since you read it (if_match ${a.if_match}, current etag ${file.etag}); nothing was changed. Re-read it with file_read and apply your change to the current content.`,
      );
    }
    if (file.size > file.data.length) {
      toolFailure(
        'too_large',
        `${a.path} is ${file.size} bytes; file_edit edits files up to ${SIZES.fileBytes} bytes. Edit it with exec_run (e.g. sed), or rewrite it with file_write in chunks.`,
      );
    }
    if (!isUtf8(file.data)) {
      toolFailure(
        'invalid_argument',
        `${a.path} is not UTF-8 text (binary content); file_edit would corrupt it, so nothing was changed. Read it with file_read encoding base64 and write it with file_write encoding base64.`,
      );
    }
    const text = file.data.toString('utf8');
    const n = countOccurrences(text, a.old_string);
    if (n === 0) {
      toolFailure(
        'invalid_argument',
        `old_string was not found in ${a.path} (0 matches); nothing was changed. Re-read the file with file_read and copy the exact text, whitespace included.`,
      );
    }
    if (n > 1) {
      toolFailure(
        'invalid_argument',
        `old_string occurs ${n} times in ${a.path}; nothing was changed. Include more surrounding text so that it matches exactly once.`,
      );
    }
    const at = text.indexOf(a.old_string);
    const data = Buffer.from(text.slice(0, at) + a.new_string + text.slice(at + a.old_string.length), 'utf8');
    // Written only if the file is still the one read (one agent operation): no lost update.
    const r = await api.writeFile(id, a.path, data, { mode: stat.mode & 0o7777, ifMatch: file.etag });
    return { structured: { path: a.path, size: r.size, etag: r.etag, replacements: 1 } };
  },
});
