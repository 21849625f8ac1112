import { z } from 'zod';
import { snapshotArg } from '../snapshot-shapes.ts';
import { defineTool, HINTS } from '../tool-kit.ts';

export const snapshotDelete = defineTool({
  name: 'snapshot_delete',
  title: 'Delete a snapshot',
  description:
    'Delete a snapshot and free its storage. Refused while live sandboxes were restored from it (they are named), unless `cascade` is true, which kills them too.',
  annotations: HINTS.destroy,
  input: z.object({
    snapshot: snapshotArg,
    cascade: z.boolean().optional().describe('Also kill the sandboxes built on it (default false).'),
  }),
  output: z.object({ deleted: z.string(), killed: z.array(z.string()) }),
  async run(a, { api }) {
    return { structured: await api.deleteSnapshot(a.snapshot, a.cascade ? { cascade: true } : {}) };
  },
});
