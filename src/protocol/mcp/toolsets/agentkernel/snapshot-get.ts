import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { akSnapshot, nameArg, snapshotSource } from './shapes.ts';
import { akTool } from './tool.ts';

export const snapshotGet = akTool({
  name: 'snapshot_get',
  title: 'Get a snapshot',
  description: 'Get information about a snapshot.',
  annotations: HINTS.read,
  input: z.object({ name: nameArg.describe('Name of the snapshot') }),
  async run(a, { api }) {
    const snap = await api.getSnapshot(a.name);
    return akSnapshot(snap, await snapshotSource(api, snap));
  },
});
