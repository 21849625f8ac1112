import { z } from 'zod';
import { SIZES } from '../../../../domain/limits.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { devbenchErrorText } from './errors.ts';
import { containerIdArg, devbenchStat, inputData } from './shapes.ts';
import { workspacePath } from './workspace.ts';

export const fsStat = compatTool(
  {
    name: 'fs_stat',
    title: 'Stat file',
    description: 'File or directory metadata: {path, size, is_dir, permissions, mtime, etag, mime_type}.',
    annotations: HINTS.read,
    input: inputData({
      container_id: containerIdArg,
      path: z.string().min(1).max(SIZES.pathChars).describe('Path to file/directory'),
    }),
    async run({ input_data: a }, { api }) {
      const path = workspacePath(a.path);
      const s = await api.getSandbox(a.container_id);
      return devbenchStat(await api.statFile(s.id, path));
    },
  },
  devbenchErrorText,
);
