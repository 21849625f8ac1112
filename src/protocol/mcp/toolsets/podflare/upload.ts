import { z } from 'zod';
import { ForkboxError } from '../../../../domain/errors.ts';
import { SIZES } from '../../../../domain/limits.ts';
import { pathSchema } from '../../../bounds.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { podflareErrorText } from './errors.ts';
import { sandboxIdArg } from './shapes.ts';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export const upload = compatTool(
  {
    name: 'upload',
    title: 'Upload',
    description: `Write base64-encoded bytes to a path in the sandbox (parent directories created; at most ${SIZES.mcpFileBytes} bytes per call).`,
    annotations: HINTS.write,
    input: z.object({
      path: pathSchema().describe('Absolute path in the sandbox'),
      content: z
        .string()
        .max(Math.ceil(SIZES.mcpFileBytes / 3) * 4)
        .describe('The bytes, base64'),
      sandbox_id: sandboxIdArg,
    }),
    async run(a, { api, sandbox }) {
      const b64 = a.content.replace(/\s+/g, '');
      if (!BASE64.test(b64) || b64.length % 4 === 1) {
        throw new ForkboxError(
          'invalid_argument',
          '`content` is not base64: encode the bytes and call upload again.',
        );
      }
      const data = Buffer.from(b64, 'base64');
      const id = await sandbox(a.sandbox_id);
      const r = await api.writeFile(id, a.path, data, { createDirs: true });
      return { path: a.path, size: r.size };
    },
  },
  podflareErrorText,
);
