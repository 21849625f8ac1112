/** Output shapes shared by several tools (snake_case, like the inputs), and the API → shape mappers. */
import { z } from 'zod';
import type { ExecRecord, StreamSummary } from '../../domain/types.ts';
import type { ForkResult, SandboxInfo } from '../../service/api.ts';

const MiB = 1024 * 1024;

export const usageShape = z.object({
  memory_bytes: z.number(),
  cpu_usage_ns: z.number(),
  pids: z.number(),
  disk_bytes: z.number().describe('What the sandbox stores of its own writes (counts against disk_mb).'),
  disk_inodes: z.number().nullable().describe('Inodes it uses (null where the storage does not count them).'),
  oom_kills: z.number(),
});

export const sandboxShape = z.object({
  id: z.string(),
  name: z.string(),
  state: z.string(),
  image: z.string(),
  parent_id: z.string().nullable(),
  depth: z.number(),
  memory_mb: z.number(),
  cpus: z.number(),
  pids: z.number(),
  disk_mb: z.number().describe('Disk limit, MiB (0: not limited).'),
  disk_inodes: z.number().describe('Inode limit (0: not limited).'),
  labels: z.record(z.string(), z.string()),
  created_at: z.string(),
  expires_at: z.string().nullable(),
  end_reason: z.string().nullable(),
  persistent: z.boolean().describe('False: removed when the client session that created it ends.'),
  children: z.array(z.string()).describe('Ids of its live child sandboxes (forks of it).'),
  usage: usageShape.optional(),
});

export type SandboxShape = z.input<typeof sandboxShape>;

export function sandboxOut(s: SandboxInfo): SandboxShape {
  const out: SandboxShape = {
    id: s.id,
    name: s.name,
    state: s.state,
    image: s.image,
    parent_id: s.parentId,
    depth: s.depth,
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
  sandbox_id: z.string(),
  command: z.array(z.string()),
  state: z.string(),
  exit_code: z.number().nullable(),
  signal: z.number().nullable(),
  timed_out: z.boolean(),
  truncated: z.boolean(),
  oom_killed: z.boolean(),
  started_at: z.string(),
  ended_at: z.string().nullable(),
  leftovers: z
    .number()
    .describe('Processes it left running when it ended (e.g. `server &`); exec_cancel ends them.'),
});

/** What became of one output stream: how much was shown inline, and where the whole of it is. */
export const streamShape = z.object({
  total_bytes: z.number(),
  omitted_bytes: z.number(),
  file: z
    .string()
    .nullable()
    .describe('The whole stream inside the sandbox (read it with file_read, offset and length), or null.'),
  spooled_bytes: z.number(),
});

export function streamOut(s: StreamSummary): z.input<typeof streamShape> {
  return {
    total_bytes: s.totalBytes,
    omitted_bytes: s.omittedBytes,
    file: s.file,
    spooled_bytes: s.spooledBytes,
  };
}

export function execOut(e: ExecRecord): z.input<typeof execShape> {
  return {
    exec_id: e.id,
    sandbox_id: e.sandboxId,
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
  environment: z.boolean(),
});
export const forkChildShape = z.object({
  ok: z.boolean(),
  sandbox: sandboxShape.optional(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});

export function forkOutcomeOut(r: ForkResult) {
  return {
    carried: {
      filesystem: r.carried.filesystem,
      python_state: r.carried.pythonState,
      environment: r.carried.environment,
    },
    not_carried: r.notCarried,
    children: r.children.map((c) => ({
      ok: c.ok,
      ...(c.sandbox ? { sandbox: sandboxOut(c.sandbox) } : {}),
      ...(c.error ? { error: c.error } : {}),
    })),
  };
}
