import { z } from 'zod';
import { sandboxBrief, sandboxBriefShape } from '../kit/shapes.ts';
import { defineTool, HINTS } from '../kit/tool-kit.ts';

export const sandboxMerge = defineTool({
  name: 'sandbox_merge',
  title: 'Merge fork',
  description:
    "Keep a winning fork: winner (a descendant of parent) takes over parent's id and name with its files, processes and REPL; its old id stays an alias.",
  annotations: HINTS.destroy,
  input: z.object({
    parent: z.string().min(1).max(128).describe('Sandbox to replace'),
    winner: z.string().min(1).max(128).describe('Fork to keep'),
  }),
  output: z.object({ sandbox: sandboxBriefShape, winner: z.string() }),
  async run(a, { api }) {
    const r = await api.mergeSandbox(a.parent, a.winner);
    return { structured: { sandbox: sandboxBrief(r.sandbox), winner: r.winner } };
  },
});
