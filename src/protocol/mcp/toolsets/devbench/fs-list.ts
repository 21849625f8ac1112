import { z } from 'zod';
import { SIZES } from '../../../../domain/limits.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { devbenchErrorText } from './errors.ts';
import { containerIdArg, devbenchEntry, inputData } from './shapes.ts';
import { workspacePath } from './workspace.ts';

/** Entries carry an empty `etag` (a listing hashes nothing; fs_stat gives a file's ETag). */
export const fsList = compatTool(
  {
    name: 'fs_list',
    title: 'List directory',
    description: 'List files and directories in a workspace path (entries without ETags: fs_stat gives one).',
    annotations: HINTS.read,
    input: inputData({
      container_id: containerIdArg,
      path: z.string().min(1).max(SIZES.pathChars).default('/workspace').describe('Directory path to list'),
    }),
    async run({ input_data: a }, { api }) {
      const path = workspacePath(a.path);
      const s = await api.getSandbox(a.container_id);
      const r = await api.listFiles(s.id, path);
      return { path: a.path, entries: r.entries.map(devbenchEntry) };
    },
  },
  devbenchErrorText,
);
