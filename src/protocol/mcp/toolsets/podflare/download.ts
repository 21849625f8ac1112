import { z } from 'zod';
import { ForkboxError } from '../../../../domain/errors.ts';
import { SIZES } from '../../../../domain/limits.ts';
import { pathSchema } from '../../../bounds.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { podflareErrorText } from './errors.ts';
import { sandboxIdArg } from './shapes.ts';

/** The file's bytes as base64, the text of the result (a string, as Podflare returned). */
export const download = compatTool(
  {
    name: 'download',
    title: 'Download',
    description: `Read a file from the sandbox and return its contents as base64 (at most ${SIZES.mcpFileBytes} bytes).`,
    annotations: HINTS.read,
    input: z.object({
      path: pathSchema().describe('Absolute path in the sandbox'),
      sandbox_id: sandboxIdArg,
    }),
    async run(a, { api, sandbox }) {
      const id = await sandbox(a.sandbox_id);
      const r = await api.readFile(id, a.path, { length: SIZES.mcpFileBytes + 1 });
      if (r.size > SIZES.mcpFileBytes) {
        throw new ForkboxError(
          'too_large',
          `${a.path} is ${r.size} bytes, over ${SIZES.mcpFileBytes} per download: split it first (run_bash: split -b 2M).`,
        );
      }
      return r.data.toString('base64');
    },
  },
  podflareErrorText,
);
