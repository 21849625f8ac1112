import { z } from 'zod';
import { snapshotArg, snapshotOut, snapshotShape } from '../snapshot-shapes.ts';
import { defineTool, HINTS } from '../tool-kit.ts';

export const snapshotGet = defineTool({
  name: 'snapshot_get',
  title: 'Get snapshot',
  description: 'One snapshot: source, python_state, and the live sandboxes restored from it.',
  annotations: HINTS.read,
  input: z.object({ snapshot: snapshotArg }),
  output: snapshotShape,
  async run(a, { api }) {
    return { structured: snapshotOut(await api.getSnapshot(a.snapshot)) };
  },
});
