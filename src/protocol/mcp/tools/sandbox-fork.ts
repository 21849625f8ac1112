import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';
import type { ForkRequest } from '../../../service/api.ts';
import { boundedNumber, nameSchema } from '../../bounds.ts';
import { carriedShape, forkChildShape, forkOutcomeOut } from '../shapes.ts';
import { defineTool, diskInodesArg, diskMbArg, envArg, HINTS, sandboxArg } from '../tool-kit.ts';

export const sandboxFork = defineTool({
  name: 'sandbox_fork',
  title: 'Fork a running sandbox into N children',
  description:
    'Branch a running sandbox into n children (1-100) that start from its exact current state: its files, and its live Python REPL (variables, imported modules, loaded data, open files — each child writes to its own copy). Use it to try several approaches in parallel from the state you reached, then keep the best (sandbox_kill the rest). Not carried: other processes (servers or background commands stay in the source), REPL threads other than the main one, sockets, pipes and memory maps. Each child reseeds `random` (and numpy) and has FORKBOX_SANDBOX_ID, FORKBOX_PARENT_ID and FORKBOX_FORK_INDEX set. The source keeps running; it is paused only for `pause_ms`. If the REPL is busy, the fork waits for it unless `wait` is false. Children inherit limits, TTL, env and labels unless given. Each child succeeds or fails on its own.',
  annotations: HINTS.create,
  input: z.object({
    sandbox: sandboxArg,
    n: boundedNumber(LIMITS.forkChildren).optional().describe('Number of children (default 1).'),
    names: z
      .array(nameSchema())
      .max(LIMITS.forkChildren.max)
      .optional()
      .describe('Names for the children (exactly n).'),
    memory_mb: boundedNumber(LIMITS.memoryMb)
      .optional()
      .describe("Children's memory limit, MiB (default: the source's)."),
    disk_mb: diskMbArg.describe(
      "Children's disk limit, MiB (default: the source's); it counts only what a child writes itself.",
    ),
    disk_inodes: diskInodesArg,
    ttl_s: boundedNumber(LIMITS.ttlSeconds)
      .optional()
      .describe("Children's TTL in seconds (default: what is left of the source's)."),
    env: envArg.describe("Added to the source's environment in each child."),
    wait: z
      .boolean()
      .optional()
      .describe('Wait for a busy REPL to finish (default true); false fails at once instead.'),
  }),
  output: z.object({
    source: z.string(),
    pause_ms: z.number().describe("How long the source's workload was frozen."),
    snapshot_ms: z.number(),
    driver: z.string().describe('Storage driver that froze the files (btrfs or copy).'),
    duration_ms: z.number(),
    carried: carriedShape,
    not_carried: z.array(z.string()),
    children: z.array(forkChildShape),
  }),
  async run(a, { api, sandbox }) {
    const req: ForkRequest = {};
    if (a.n !== undefined) req.n = a.n;
    if (a.names !== undefined) req.names = a.names;
    if (a.memory_mb !== undefined) req.memoryMb = a.memory_mb;
    if (a.disk_mb !== undefined) req.diskMb = a.disk_mb;
    if (a.disk_inodes !== undefined) req.diskInodes = a.disk_inodes;
    if (a.ttl_s !== undefined) req.ttlSeconds = a.ttl_s;
    if (a.env !== undefined) req.env = a.env;
    if (a.wait !== undefined) req.wait = a.wait;
    const r = await api.forkSandbox(await sandbox(a.sandbox), req);
    return {
      structured: {
        source: r.source,
        pause_ms: r.pauseMs,
        snapshot_ms: r.snapshotMs,
        driver: r.driver,
        duration_ms: r.durationMs,
        ...forkOutcomeOut(r),
      },
    };
  },
});
