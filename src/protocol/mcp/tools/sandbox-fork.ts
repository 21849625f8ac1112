import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';
import type { ForkRequest } from '../../../service/api.ts';
import { boundedNumber, nameSchema } from '../../bounds.ts';
import { envArg } from '../kit/kv-list.ts';
import { carriedShape, forkChildShape, forkOutcomeOut } from '../kit/shapes.ts';
import { defineTool, diskInodesArg, diskMbArg, HINTS, sandboxArg } from '../kit/tool-kit.ts';

export const sandboxFork = defineTool({
  name: 'sandbox_fork',
  title: 'Fork sandbox',
  description:
    'Branch a running sandbox into n children with its files and live Python REPL (variables, modules, data): try approaches in parallel, keep one (sandbox_merge), kill the rest. Not carried: other processes, sockets. Inherited: limits, TTL, env, ports (new host ports).',
  annotations: HINTS.create,
  input: z.object({
    sandbox: sandboxArg,
    n: boundedNumber(LIMITS.forkChildren).optional().describe('Children (default 1)'),
    names: z.array(nameSchema()).max(LIMITS.forkChildren.max).optional().describe('Their names'),
    memory_mb: boundedNumber(LIMITS.memoryMb).optional().describe("Memory limit (default the source's)"),
    disk_mb: diskMbArg.describe("Disk limit, MiB (default the source's)"),
    disk_inodes: diskInodesArg,
    ttl_s: boundedNumber(LIMITS.ttlSeconds).optional().describe("TTL (default the source's remaining)"),
    env: envArg.optional().describe('Extra env, NAME=value'),
    wait: z.boolean().optional().describe('Wait for a busy REPL (default true)'),
  }),
  output: z.object({
    source: z.string(),
    pause_ms: z.number(),
    snapshot_ms: z.number(),
    driver: z.string(),
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
