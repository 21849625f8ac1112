import { z } from 'zod';
import { sandboxOut, sandboxShape } from '../shapes.ts';
import { defineTool, HINTS } from '../tool-kit.ts';

export const sandboxMerge = defineTool({
  name: 'sandbox_merge',
  title: 'Keep a fork (merge it into its parent)',
  description:
    "Keep the winning fork: `winner` (a fork of `parent`, or a fork of one of its forks) takes over the parent's id and name, so its files, processes and Python REPL answer as the parent from now on. The parent's old processes end; the winner's old id keeps working as an alias; other forks are untouched (kill them with sandbox_kill). Inside the sandbox, FORKBOX_SANDBOX_ID still holds the winner's original id.",
  annotations: HINTS.destroy,
  input: z.object({
    parent: z.string().min(1).max(128).describe('The sandbox to replace (id or name).'),
    winner: z.string().min(1).max(128).describe('The fork to keep (id or name).'),
  }),
  output: z.object({ sandbox: sandboxShape, winner: z.string() }),
  async run(a, { api }) {
    const r = await api.mergeSandbox(a.parent, a.winner);
    return { structured: { sandbox: sandboxOut(r.sandbox), winner: r.winner } };
  },
});
