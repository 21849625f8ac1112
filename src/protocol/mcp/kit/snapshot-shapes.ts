/** Output shapes of the snapshot tools. */
import { z } from 'zod';
import type { SnapshotInfo } from '../../../service/api.ts';

export const snapshotShape = z.object({
  id: z.string(),
  name: z.string(),
  source: z.string(),
  image: z.string(),
  created_at: z.string(),
  python_state: z.boolean(),
  layers: z.number(),
  dependents: z.array(z.string()),
});

export function snapshotOut(s: SnapshotInfo): z.input<typeof snapshotShape> {
  return {
    id: s.id,
    name: s.name,
    source: s.source,
    image: s.image,
    created_at: s.createdAt,
    python_state: s.pythonState,
    layers: s.layers,
    dependents: s.dependents,
  };
}

export const snapshotArg = z.string().min(1).max(128).describe('Id or name');
