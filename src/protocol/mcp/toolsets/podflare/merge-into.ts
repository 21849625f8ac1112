import { z } from 'zod';
import { refSchema } from '../../../bounds.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { podflareErrorText } from './errors.ts';
import { sandboxIdArg } from './shapes.ts';

/**
 * The session sandbox becomes the winner: the winner's files, processes and REPL answer under the
 * session sandbox's id from now on (forkbox's merge); the parent's old state ends; siblings are
 * untouched; the winner's own id is retired (an alias of the parent's).
 */
export const mergeInto = compatTool(
  {
    name: 'merge_into',
    title: 'Merge into',
    description:
      "Commit a winner fork as the new state of this session's sandbox: after the call its id runs the winner's state and the winner's id is defunct.",
    annotations: HINTS.destroy,
    input: z.object({
      winner: refSchema().describe('Id of the fork to keep'),
      sandbox_id: sandboxIdArg,
    }),
    async run(a, { api, sandbox }) {
      const parent = await sandbox(a.sandbox_id);
      const r = await api.mergeSandbox(parent, a.winner);
      return { sandbox: r.sandbox.id, merged: r.winner };
    },
  },
  podflareErrorText,
);
