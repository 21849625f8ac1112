import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { nameArg } from './shapes.ts';
import { akTool } from './tool.ts';

/** Refused while sandboxes restored from it are alive (they are named): remove them first. */
export const snapshotDelete = akTool({
  name: 'snapshot_delete',
  title: 'Delete a snapshot',
  description: 'Delete a snapshot (refused while sandboxes restored from it are running).',
  annotations: HINTS.destroy,
  input: z.object({ name: nameArg.describe('Name of the snapshot to delete') }),
  async run(a, { api }) {
    await api.deleteSnapshot(a.name);
    return `Snapshot '${a.name}' deleted.`;
  },
});
