import { z } from 'zod';
import { pathSchema, refSchema } from '../../../bounds.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { podflareErrorText } from './errors.ts';
import { sandboxIdArg } from './shapes.ts';

/** Podflare's default scope: where its diff hashed files. */
const DEFAULT_PATHS = ['/root', '/tmp'];
/** Paths listed per kind. */
const MAX_LISTED = 1000;

/**
 * Podflare hashed every file under the paths in both sandboxes and compared the lists; forkbox compares
 * the two sandboxes' layers on the host (nothing runs inside), with the same answer: paths added in
 * other_id, removed from it, modified (content, type or mode).
 */
export const diff = compatTool(
  {
    name: 'diff',
    title: 'Diff',
    description:
      "Compare the filesystems of two sandboxes (this session's, or sandbox_id, against other_id, e.g. two forks) under paths (default /root and /tmp): {added, removed, modified} paths, as other_id has them.",
    annotations: HINTS.read,
    input: z.object({
      other_id: refSchema().describe('The sandbox to compare with (e.g. an id from fork)'),
      sandbox_id: sandboxIdArg,
      paths: z.array(pathSchema()).min(1).max(64).default(DEFAULT_PATHS).describe('Only under these'),
    }),
    async run(a, { api, sandbox }) {
      const from = await sandbox(a.sandbox_id);
      const d = await api.diffSandboxes(from, a.other_id, { paths: a.paths });
      const cut = (xs: { path: string }[]) => xs.slice(0, MAX_LISTED).map((x) => x.path);
      const truncated =
        d.truncated ||
        (d.nextCursor ?? null) !== null ||
        [d.added, d.removed, d.modified].some((xs) => xs.length > MAX_LISTED);
      return {
        added: cut(d.added),
        removed: cut(d.removed),
        modified: cut(d.modified),
        ...(truncated ? { truncated: true } : {}),
      };
    },
  },
  podflareErrorText,
);
