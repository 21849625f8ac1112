import { listTool } from '../kit/list-tool.ts';
import { snapshotOut, snapshotShape } from '../kit/snapshot-shapes.ts';

export const snapshotList = listTool({
  name: 'snapshot_list',
  title: 'List snapshots',
  description: 'List your snapshots.',
  key: 'snapshots',
  item: snapshotShape,
  list: (api) => api.listSnapshots(),
  out: snapshotOut,
});
