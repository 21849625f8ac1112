import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { akSnapshot } from './shapes.ts';
import { akTool } from './tool.ts';

export const snapshotList = akTool({
  name: 'snapshot_list',
  title: 'List snapshots',
  description: 'List all snapshots.',
  annotations: HINTS.read,
  input: z.object({}),
  async run(_a, { api }) {
    const [snaps, sandboxes] = await Promise.all([api.listSnapshots(), api.listSandboxes({ all: true })]);
    const byId = new Map(sandboxes.map((s) => [s.id, s]));
    return snaps.map((s) => akSnapshot(s, byId.get(s.source)));
  },
});
