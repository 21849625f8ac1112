import { z } from 'zod';
import { snapshotArg } from '../kit/snapshot-shapes.ts';
import { defineTool, HINTS } from '../kit/tool-kit.ts';

export const snapshotDelete = defineTool({
  name: 'snapshot_delete',
  title: 'Delete snapshot',
  description:
    'Delete a snapshot. Refused while sandboxes restored from it live, unless cascade (kills them).',
  annotations: HINTS.destroy,
  input: z.object({
    snapshot: snapshotArg,
    cascade: z.boolean().optional().describe('Also kill sandboxes restored from it'),
  }),
  output: z.object({ deleted: z.string(), killed: z.array(z.string()) }),
  async run(a, { api }) {
    return { structured: await api.deleteSnapshot(a.snapshot, a.cascade ? { cascade: true } : {}) };
  },
});
