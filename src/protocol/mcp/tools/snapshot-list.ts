import { z } from 'zod';
import { snapshotOut, snapshotShape } from '../kit/snapshot-shapes.ts';
import { defineTool, HINTS } from '../kit/tool-kit.ts';

export const snapshotList = defineTool({
  name: 'snapshot_list',
  title: 'List snapshots',
  description: 'List your snapshots.',
  annotations: HINTS.read,
  input: z.object({}),
  output: z.object({ snapshots: z.array(snapshotShape) }),
  async run(_a, { api }) {
    return { structured: { snapshots: (await api.listSnapshots()).map(snapshotOut) } };
  },
});
