import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';
import type { ForkRequest } from '../../../service/api.ts';
import { boundedNumber, nameSchema } from '../../bounds.ts';
import { carriedShape, forkChildShape, forkOutcomeOut } from '../kit/shapes.ts';
import { snapshotArg } from '../kit/snapshot-shapes.ts';
import { defineTool, HINTS } from '../kit/tool-kit.ts';

export const snapshotRestore = defineTool({
  name: 'snapshot_restore',
  title: 'Restore snapshot',
  description:
    'Create n sandboxes from a snapshot: its files and, while python_state, its REPL (carried says what came back). Owned by your session.',
  annotations: HINTS.create,
  input: z.object({
    snapshot: snapshotArg,
    n: boundedNumber(LIMITS.forkChildren).optional().describe('Sandboxes (default 1)'),
    names: z.array(nameSchema()).max(LIMITS.forkChildren.max).optional().describe('Their names'),
    memory_mb: boundedNumber(LIMITS.memoryMb).optional().describe("Memory limit (default the snapshot's)"),
    ttl_s: boundedNumber(LIMITS.ttlSeconds).optional().describe('Seconds until they are killed'),
  }),
  output: z.object({
    snapshot: z.string(),
    carried: carriedShape,
    not_carried: z.array(z.string()),
    sandboxes: z.array(forkChildShape),
  }),
  async run(a, { api }) {
    const req: ForkRequest = {};
    if (a.n !== undefined) req.n = a.n;
    if (a.names !== undefined) req.names = a.names;
    if (a.memory_mb !== undefined) req.memoryMb = a.memory_mb;
    if (a.ttl_s !== undefined) req.ttlSeconds = a.ttl_s;
    const r = await api.restoreSnapshot(a.snapshot, req);
    const { children, ...outcome } = forkOutcomeOut(r);
    return { structured: { snapshot: r.source, ...outcome, sandboxes: children } };
  },
});
