import { z } from 'zod';
import { snapshotArg, snapshotOut, snapshotShape } from '../kit/snapshot-shapes.ts';
import { defineTool, HINTS } from '../kit/tool-kit.ts';

export const snapshotGet = defineTool({
  name: 'snapshot_get',
  title: 'Get snapshot',
  description: 'One snapshot: source, python_state, live sandboxes restored from it.',
  annotations: HINTS.read,
  input: z.object({ snapshot: snapshotArg }),
  // Only here (not in every list entry): why the live copy went, where it did.
  output: snapshotShape.extend({ python_state_lost: z.string().optional() }),
  async run(a, { api }) {
    const s = await api.getSnapshot(a.snapshot);
    const lost = s.pythonStateLost === undefined ? {} : { python_state_lost: s.pythonStateLost };
    return { structured: { ...snapshotOut(s), ...lost } };
  },
});
