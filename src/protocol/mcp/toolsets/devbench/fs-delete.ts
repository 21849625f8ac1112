import { z } from 'zod';
import { ForkboxError } from '../../../../domain/errors.ts';
import { SIZES } from '../../../../domain/limits.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { auditEvent } from './audit.ts';
import { devbenchErrorText } from './errors.ts';
import { containerIdArg, inputData } from './shapes.ts';
import { WORKSPACE, workspacePath } from './workspace.ts';

export const fsDelete = compatTool(
  {
    name: 'fs_delete',
    title: 'Delete file',
    description: 'Delete a file or directory (with its contents) from the container workspace.',
    annotations: HINTS.destroy,
    input: inputData({
      container_id: containerIdArg,
      path: z.string().min(1).max(SIZES.pathChars).describe('Path to file/directory to delete'),
    }),
    async run({ input_data: a }, { api, log }) {
      const path = workspacePath(a.path);
      if (path === WORKSPACE) {
        throw new ForkboxError(
          'invalid_argument',
          `Path security violation for '${a.path}': Cannot delete workspace root. Delete the entries in it instead.`,
        );
      }
      const s = await api.getSandbox(a.container_id);
      await api.deleteFile(s.id, path, { recursive: true });
      auditEvent(log, 'fs_delete', { container_id: s.id, details: { path } });
      return { status: 'deleted', path: a.path };
    },
  },
  devbenchErrorText,
);
