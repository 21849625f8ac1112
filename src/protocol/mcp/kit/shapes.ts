/** Output shapes shared by several tools (snake_case, like the inputs), and the API → shape mappers. */
import { z } from 'zod';
import { MiB } from '../../../domain/sizes.ts';
import type { ExecRecord } from '../../../domain/types.ts';
import type { ForkResult, PortInfo, SandboxInfo } from '../../../service/api.ts';

/**
 * Output fields are not described (every tools/list token is paid on every turn): disk_bytes is what the
 * sandbox stores of its own writes (it counts against disk_mb), disk_inodes null where the storage does not
 * count them; disk_mb and disk_inodes limits are 0 when not limited.
 */
export const usageShape = z.object({
  memory_bytes: z.number(),
  cpu_usage_ns: z.number(),
  pids: z.number(),
  disk_bytes: z.number(),
  disk_inodes: z.number().nullable(),
  oom_kills: z.number(),
});

export const sandboxShape = z.object({
  id: z.string(),
  name: z.string(),
  state: z.string(),
  image: z.string(),
  parent_id: z.string().nullable(),
  memory_mb: z.number(),
  cpus: z.number(),
  pids: z.number(),
  disk_mb: z.number(),
  disk_inodes: z.number(),
  labels: z.record(z.string(), z.string()),
  created_at: z.string(),
  expires_at: z.string().nullable(),
  end_reason: z.string().nullable(),
  persistent: z.boolean(),
  children: z.array(z.string()),
  runtime: z.string(),
});

/** sandbox_get's output: the sandbox with its live usage. */
export const sandboxWithUsageShape = sandboxShape.extend({
  usage: usageShape.optional(),
  network: z.string().optional(),
});

/** One line of sandbox_list. */
export const sandboxSummaryShape = sandboxShape.pick({
  id: true,
  name: true,
  state: true,
  image: true,
  parent_id: true,
  labels: true,
  expires_at: true,
  persistent: true,
});

export type SandboxShape = z.input<typeof sandboxWithUsageShape>;

/** What a lifecycle call (kill, pause, resume, extend) changed: the sandbox's state and expiry. */
export const sandboxBriefShape = z.object({
  id: z.string(),
  name: z.string(),
  state: z.string(),
  expires_at: z.string().nullable(),
  end_reason: z.string().nullable(),
});

export function sandboxBrief(s: SandboxInfo): z.input<typeof sandboxBriefShape> {
  return { id: s.id, name: s.name, state: s.state, expires_at: s.expiresAt, end_reason: s.endReason };
}

export function sandboxOut(s: SandboxInfo): SandboxShape {
  const out: SandboxShape = {
    id: s.id,
    name: s.name,
    state: s.state,
    image: s.image,
    parent_id: s.parentId,
    memory_mb: Math.round(s.limits.memoryBytes / MiB),
    cpus: s.limits.cpus,
    pids: s.limits.pids,
    disk_mb: Math.round(s.limits.diskBytes / MiB),
    disk_inodes: s.limits.diskInodes,
    labels: s.labels,
    created_at: s.createdAt,
    expires_at: s.expiresAt,
    end_reason: s.endReason,
    persistent: s.persistent,
    children: s.children,
    runtime: s.runtime,
  };
  if (s.usage) {
    out.usage = {
      memory_bytes: s.usage.memoryBytes,
      cpu_usage_ns: s.usage.cpuUsageNs,
      pids: s.usage.pids,
      disk_bytes: s.usage.diskBytes,
      disk_inodes: s.usage.diskInodes,
      oom_kills: s.usage.oomKills,
    };
  }
  return out;
}

export const execShape = z.object({
  exec_id: z.string(),
  command: z.array(z.string()),
  state: z.string(),
  exit_code: z.number().nullable(),
  signal: z.number().nullable(),
  timed_out: z.boolean(),
  truncated: z.boolean(),
  oom_killed: z.boolean(),
  started_at: z.string(),
  ended_at: z.string().nullable(),
  leftovers: z.number(),
});

/** A command's state as exec_poll reports it. */
export const execStatusShape = execShape.pick({
  state: true,
  exit_code: true,
  signal: true,
  timed_out: true,
  oom_killed: true,
  leftovers: true,
});

export function execOut(e: ExecRecord): z.input<typeof execShape> {
  return {
    exec_id: e.id,
    command: e.command,
    state: e.state,
    exit_code: e.exitCode,
    signal: e.signal,
    timed_out: e.timedOut,
    truncated: e.truncated,
    oom_killed: e.oomKilled,
    started_at: new Date(e.startedAt).toISOString(),
    ended_at: e.endedAt === null ? null : new Date(e.endedAt).toISOString(),
    leftovers: e.leftovers,
  };
}

/** What a fork or a snapshot restore carried into its new sandboxes, and each one's outcome. */
export const carriedShape = z.object({
  filesystem: z.boolean(),
  python_state: z.boolean(),
  processes: z.boolean(),
  environment: z.boolean(),
});
export const forkChildShape = z.object({
  ok: z.boolean(),
  id: z.string().optional(),
  name: z.string().optional(),
  error: z.string().optional(),
});

export function forkOutcomeOut(r: ForkResult) {
  return {
    carried: {
      filesystem: r.carried.filesystem,
      python_state: r.carried.pythonState,
      processes: r.carried.processes,
      environment: r.carried.environment,
    },
    not_carried: r.notCarried,
    children: r.children.map((c) => ({
      ok: c.ok,
      ...(c.sandbox ? { id: c.sandbox.id, name: c.sandbox.name } : {}),
      ...(c.error ? { error: `${c.error.message} [code: ${c.error.code}]` } : {}),
    })),
  };
}

/** What became of one output stream (see StreamSummary in the service ports). */
export const streamShape = z.object({
  total_bytes: z.number(),
  omitted_bytes: z.number(),
  file: z.string().nullable(),
  spooled_bytes: z.number(),
});

export const streamsShape = z
  .object({ stdout: streamShape, stderr: streamShape })
  .describe('Per stream: total, omitted, its full file');

interface StreamSummaryLike {
  totalBytes: number;
  omittedBytes: number;
  file: string | null;
  spooledBytes: number;
}

const streamOut = (s: StreamSummaryLike): z.input<typeof streamShape> => ({
  total_bytes: s.totalBytes,
  omitted_bytes: s.omittedBytes,
  file: s.file,
  spooled_bytes: s.spooledBytes,
});

/** The `streams` field of a result, when the runtime reported it. */
export function streamsOut(s: { stdout: StreamSummaryLike; stderr: StreamSummaryLike } | null | undefined) {
  return s ? { streams: { stdout: streamOut(s.stdout), stderr: streamOut(s.stderr) } } : {};
}

/** A published port: the sandbox's loopback `port` answers on the host at 127.0.0.2:`host_port`. */
export const portShape = z.object({ port: z.number(), host_port: z.number() });

export function portOut(p: PortInfo): z.infer<typeof portShape> {
  return { port: p.port, host_port: p.hostPort };
}
