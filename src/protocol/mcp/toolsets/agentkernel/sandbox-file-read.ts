import { z } from 'zod';
import { ForkboxError } from '../../../../domain/errors.ts';
import { SIZES } from '../../../../domain/limits.ts';
import { pathSchema } from '../../../bounds.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { nameArg } from './shapes.ts';
import { akTool } from './tool.ts';

/**
 * The file as text; bytes that are not UTF-8 come back as agentkernel sent them: a
 * `[binary file, N bytes, base64 encoded]` line, then the base64. Results are cut to 16 KB like every
 * agentkernel result; files over 2 MiB are refused.
 */
export const sandboxFileRead = akTool({
  name: 'sandbox_file_read',
  title: 'Read a file',
  description: `Read a file from a running sandbox (text; binary files as base64; at most ${SIZES.mcpFileBytes} bytes).`,
  annotations: HINTS.read,
  input: z.object({
    name: nameArg,
    path: pathSchema().describe('Path inside the sandbox to read'),
  }),
  async run(a, { api }) {
    const r = await api.readFile(a.name, a.path, { length: SIZES.mcpFileBytes + 1 });
    if (r.size > SIZES.mcpFileBytes) {
      throw new ForkboxError(
        'too_large',
        `${a.path} is ${r.size} bytes, over ${SIZES.mcpFileBytes}: read a part of it with sandbox_exec (e.g. ["head", "-c", "100000", "${a.path}"]).`,
      );
    }
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(r.data);
    } catch {
      return `[binary file, ${r.data.length} bytes, base64 encoded]\n${r.data.toString('base64')}`;
    }
  },
});
