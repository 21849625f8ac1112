import { z } from 'zod';
import { ForkboxError, isForkboxError } from '../../../../domain/errors.ts';
import { SIZES } from '../../../../domain/limits.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { auditEvent } from './audit.ts';
import { devbenchErrorText } from './errors.ts';
import { containerIdArg, inputData } from './shapes.ts';
import { workspacePath } from './workspace.ts';

/**
 * A write with DevBench's ETag check: `if_match_etag` is forkbox's `if_match`, checked and written in one
 * agent step (DevBench stat'ed then wrote, so two writers could both pass). A stale ETag is DevBench's
 * FileConflictError, naming the ETag found. Parent directories are created (DevBench's tar upload did).
 */
export const fsWrite = compatTool(
  {
    name: 'fs_write',
    title: 'Write file',
    description: `Write a file to the container workspace (UTF-8 content, ≤${SIZES.mcpFileBytes} bytes). if_match_etag: refused if the file's ETag is no longer that one.`,
    annotations: HINTS.write,
    input: inputData({
      container_id: containerIdArg,
      path: z.string().min(1).max(SIZES.pathChars).describe('Path to file within /workspace'),
      content: z.string().max(SIZES.mcpFileBytes).describe('File content to write'),
      if_match_etag: z.string().min(1).max(128).optional().describe('Required etag for conditional write'),
    }),
    async run({ input_data: a }, { api, log }) {
      const path = workspacePath(a.path);
      const s = await api.getSandbox(a.container_id);
      const data = Buffer.from(a.content, 'utf8');
      if (data.length > SIZES.mcpFileBytes) {
        throw new ForkboxError(
          'too_large',
          `content is ${data.length} bytes, over ${SIZES.mcpFileBytes} per call: write less.`,
        );
      }
      const opts = {
        createDirs: true,
        ...(a.if_match_etag === undefined ? {} : { ifMatch: a.if_match_etag }),
      };
      const r = await api.writeFile(s.id, path, data, opts).catch(async (e: unknown) => {
        if (!isForkboxError(e) || e.code !== 'conflict' || a.if_match_etag === undefined) throw e;
        const found = await api.statFile(s.id, path).then(
          (st) => st.etag ?? '',
          () => '(none: the file is gone)',
        );
        throw new ForkboxError(
          'conflict',
          `File conflict at '${path}': expected ETag '${a.if_match_etag}', but found '${found}'. Re-read it with fs_read and write again.`,
        );
      });
      auditEvent(log, 'fs_write', { container_id: s.id, details: { path, size_bytes: r.size } });
      return { path: a.path, etag: r.etag, size: r.size };
    },
  },
  devbenchErrorText,
);
