import { z } from 'zod';
import { ForkboxError } from '../../../../domain/errors.ts';
import { SIZES } from '../../../../domain/limits.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { auditEvent } from './audit.ts';
import { devbenchErrorText } from './errors.ts';
import { containerIdArg, inputData } from './shapes.ts';
import { mimeOf, workspacePath } from './workspace.ts';

/**
 * `content` is the bytes as a UTF-8 string, as pydantic serialised DevBench's `bytes` field; a file that
 * is not UTF-8 is refused (DevBench's serialiser failed on it too). At most SIZES.mcpFileBytes.
 */
export const fsRead = compatTool(
  {
    name: 'fs_read',
    title: 'Read file',
    description: `Read a file from the container workspace: {content, etag, size, mime_type} (≤${SIZES.mcpFileBytes} bytes, UTF-8 text).`,
    annotations: HINTS.read,
    input: inputData({
      container_id: containerIdArg,
      path: z.string().min(1).max(SIZES.pathChars).describe('Path to file within /workspace'),
    }),
    async run({ input_data: a }, { api, log }) {
      const path = workspacePath(a.path);
      const s = await api.getSandbox(a.container_id);
      const r = await api.readFile(s.id, path, { length: SIZES.mcpFileBytes + 1 });
      if (r.size > SIZES.mcpFileBytes) {
        throw new ForkboxError(
          'too_large',
          `${path} is ${r.size} bytes, over ${SIZES.mcpFileBytes}: read it in parts with exec_start (e.g. head -c, tail -c).`,
        );
      }
      const text = new TextDecoder('utf-8', { fatal: true });
      let content: string;
      try {
        content = text.decode(r.data);
      } catch {
        throw new ForkboxError(
          'invalid_argument',
          `${path} is not UTF-8 text: read it as base64 with exec_start ["base64", "${path}"].`,
        );
      }
      auditEvent(log, 'fs_read', { container_id: s.id, details: { path, size_bytes: r.size } });
      return { content, etag: r.etag, size: r.size, mime_type: mimeOf(path) };
    },
  },
  devbenchErrorText,
);
