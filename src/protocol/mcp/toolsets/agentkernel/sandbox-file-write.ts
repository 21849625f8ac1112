import { z } from 'zod';
import { SIZES } from '../../../../domain/limits.ts';
import { pathSchema } from '../../../bounds.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { nameArg } from './shapes.ts';
import { akTool } from './tool.ts';

/** Text content, written as UTF-8 (parent directories created, as `docker cp` did); at most 2 MiB. */
export const sandboxFileWrite = akTool({
  name: 'sandbox_file_write',
  title: 'Write a file',
  description: `Write a file into a running sandbox (text, UTF-8; parent directories are created; at most ${SIZES.mcpFileBytes} bytes).`,
  annotations: HINTS.write,
  input: z.object({
    name: nameArg,
    path: pathSchema().describe('Path inside the sandbox where to write the file'),
    content: z.string().max(SIZES.mcpFileBytes).describe('Content to write to the file'),
  }),
  async run(a, { api }) {
    const data = Buffer.from(a.content, 'utf8');
    await api.writeFile(a.name, a.path, data, { createDirs: true });
    return `Wrote ${data.length} bytes to '${a.path}' in sandbox '${a.name}'`;
  },
});
