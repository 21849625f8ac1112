/**
 * Wire schemas of the local API (/v1): request bodies and query strings, validated with zod at the
 * edge so the engine never sees unbounded or mistyped input. Also the NDJSON line shapes shared by the
 * server (local-app.ts) and the client (transports/daemon-client.ts).
 */
import { z } from 'zod';
import { ForkboxError } from '../../domain/errors.ts';
import type { ExecOutcome, ProgressEvent } from '../../service/api.ts';
import { MAX_OUTPUT_BYTES, MAX_SPOOL_BYTES } from '../../service/validate.ts';

export const MiB = 1024 * 1024;
/** JSON request bodies. */
export const JSON_BODY_LIMIT = 1 * MiB;
/** Sync exec bodies carry stdin as base64 inside the JSON. */
export const EXEC_BODY_LIMIT = 16 * MiB;
/** Raw bodies: file contents and exec stdin chunks. */
export const RAW_BODY_LIMIT = 64 * MiB;
export { FILE_SIZE_HEADER, NDJSON } from './wire.ts';

const MAX_PATH = 4096;
const name = z.string().min(1).max(256);
const envRecord = z
  .record(z.string().min(1).max(256), z.string().max(128 * 1024))
  .refine((r) => Object.keys(r).length <= 512, 'at most 512 entries');
const base64 = z
  .string()
  .max(EXEC_BODY_LIMIT)
  .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');

export const createSandboxBody = z.strictObject({
  image: name.optional(),
  name: z
    .string()
    .min(1)
    .max(63)
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'letters, digits, _ . - and starting with a letter or digit')
    .optional(),
  memoryMb: z
    .number()
    .int()
    .positive()
    .max(1024 * 1024)
    .optional(),
  cpus: z.number().positive().max(1024).optional(),
  pids: z.number().int().positive().max(1_000_000).optional(),
  diskMb: z
    .number()
    .int()
    .positive()
    .max(1024 * 1024 * 1024)
    .optional()
    .describe("disk limit in MiB on what the sandbox writes (default and maximum: the daemon's)"),
  diskInodes: z
    .number()
    .int()
    .positive()
    .max(4_000_000_000)
    .optional()
    .describe('limit on files, directories and other inodes it creates'),
  ttlSeconds: z
    .number()
    .int()
    .positive()
    .max(366 * 24 * 3600)
    .optional(),
  env: envRecord.optional(),
  labels: envRecord.optional(),
  persistent: z.boolean().optional(),
  template: z
    .string()
    .min(1)
    .max(63)
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'a template name (see GET /v1/templates)')
    .optional(),
});

/** POST /v1/templates (DefineTemplateRequest); the engine checks module names in detail. */
export const defineTemplateBody = z.strictObject({
  name: createSandboxBody.shape.template.unwrap(),
  image: name.optional(),
  prewarm: z.array(z.string().min(1).max(200)).max(64).optional(),
});

export const extendBody = z.strictObject({
  ttlSeconds: z
    .number()
    .int()
    .positive()
    .max(366 * 24 * 3600),
});

/** POST /v1/sandboxes/{id}/fork (ForkRequest). */
export const forkBody = z.strictObject({
  n: z.number().int().min(1).max(100).optional(),
  names: z.array(createSandboxBody.shape.name.unwrap()).min(1).max(100).optional(),
  memoryMb: createSandboxBody.shape.memoryMb,
  cpus: createSandboxBody.shape.cpus,
  pids: createSandboxBody.shape.pids,
  diskMb: createSandboxBody.shape.diskMb,
  diskInodes: createSandboxBody.shape.diskInodes,
  ttlSeconds: createSandboxBody.shape.ttlSeconds,
  env: envRecord.optional(),
  labels: envRecord.optional(),
  wait: z.boolean().optional(),
});
/** POST /v1/sandboxes/diff: the two sides (sandbox or snapshot ids or names) and a DiffRequest. */
export const diffBody = z.strictObject({
  a: z.string().min(1).max(256),
  b: z.string().min(1).max(256),
  paths: z.array(z.string().min(1).max(4096)).max(64).optional(),
  unifiedFor: z.string().min(1).max(4096).optional(),
});
export const killQuery = z.object({ cascade: z.enum(['1', '0', 'true', 'false']).optional() });
export const snapshotBody = z.strictObject({ name: createSandboxBody.shape.name });
export const mergeBody = z.strictObject({ winner: z.string().min(1).max(256) });

const execCommon = {
  argv: z
    .array(z.string().max(128 * 1024))
    .min(1)
    .max(4096)
    .optional(),
  cmd: z
    .string()
    .min(1)
    .max(256 * 1024)
    .optional(),
  cwd: z.string().min(1).max(MAX_PATH).optional(),
  env: envRecord.optional(),
  timeoutSeconds: z
    .number()
    .positive()
    .max(7 * 24 * 3600)
    .optional(),
  /** Inline output per stream (head + tail); the rest is in a spool file inside the sandbox. */
  maxOutputBytes: z.number().int().nonnegative().max(MAX_OUTPUT_BYTES).optional(),
  /** Bytes of each stream kept in the spool file inside the sandbox. */
  spoolBytes: z.number().int().nonnegative().max(MAX_SPOOL_BYTES).optional(),
  idempotencyKey: z.string().min(1).max(256).optional(),
};
const oneCommand = (b: { argv?: string[] | undefined; cmd?: string | undefined }) =>
  (b.argv === undefined) !== (b.cmd === undefined);
const oneCommandMsg = { message: 'give exactly one of argv (a list) or cmd (a shell string)' };

export const execBody = z
  .strictObject({ ...execCommon, stdin: base64.optional() })
  .refine(oneCommand, oneCommandMsg);
export const startExecBody = z
  .strictObject({ ...execCommon, stdin: z.boolean().optional() })
  .refine(oneCommand, oneCommandMsg);

export const codeBody = z.strictObject({
  language: z.enum(['python', 'bash', 'node']).optional(),
  code: z.string().max(MiB - 1024),
  timeoutSeconds: z
    .number()
    .positive()
    .max(7 * 24 * 3600)
    .optional(),
  maxOutputBytes: z
    .number()
    .int()
    .positive()
    .max(1024 * MiB)
    .optional(),
});

const path = z.string().min(1).max(MAX_PATH);
export const mkdirBody = z.strictObject({ path });
export const moveBody = z.strictObject({ from: path, to: path, overwrite: z.boolean().optional() });

export const buildImageBody = z.strictObject({
  distro: z.literal('debian'),
  suite: z
    .string()
    .regex(/^[a-z][a-z0-9-]{0,31}$/, 'a Debian suite name such as bookworm')
    .optional(),
  packages: z
    .array(z.string().regex(/^[a-z0-9][a-z0-9+.-]{0,127}$/, 'Debian package names'))
    .max(512)
    .optional(),
  name: name.optional(),
});
export const importImageBody = z.strictObject({ name, source: z.string().min(1).max(MAX_PATH) });

// ── query strings ──
const flag = z.enum(['1', '0', 'true', 'false']).transform((v) => v === '1' || v === 'true');
const uint = (max: number) =>
  z
    .string()
    .regex(/^\d{1,15}$/, 'a non-negative integer')
    .transform(Number)
    .refine((n) => n <= max, `at most ${max}`);

export const listSandboxesQuery = z.object({ all: flag.optional() });
export const usageQuery = z.object({ usage: flag.optional() });
export const pollQuery = z.object({
  /** -1 (before the first chunk, as in MCP's exec_poll) or a chunk's seq. */
  after_seq: z
    .string()
    .regex(/^(-1|\d{1,15})$/, '-1 or a non-negative integer')
    .transform(Number)
    .optional(),
  wait_ms: uint(60_000).optional(),
});
export const stdinQuery = z.object({ eof: flag.optional() });
export const readQuery = z.object({
  path,
  offset: uint(Number.MAX_SAFE_INTEGER).optional(),
  length: uint(RAW_BODY_LIMIT).optional(),
});
export const writeQuery = z.object({
  path,
  mode: z
    .string()
    .regex(/^[0-7]{1,4}$/, 'an octal mode such as 644')
    .transform((m) => Number.parseInt(m, 8))
    .optional(),
  create_dirs: flag.optional(),
});
export const listQuery = z.object({ path, recursive: flag.optional() });
export const statQuery = z.object({ path });
export const deleteQuery = z.object({ path, recursive: flag.optional() });
/** `label=k=v`, repeatable. */
export const labelPair = z
  .string()
  .max(64 * 1024)
  .regex(/^[^=]+=/, 'label filters are written key=value');

/** Parse with a schema; a failure becomes one `invalid_argument` naming every bad field. */
export function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const problems = r.error.issues.map(
    (i) => `${i.path.length > 0 ? i.path.join('.') : '(value)'}: ${i.message}`,
  );
  throw new ForkboxError('invalid_argument', `invalid ${what}: ${problems.join('; ')}.`, {
    issues: problems,
  });
}

// ── NDJSON lines (streaming responses) ──
export type ExecStreamLine =
  /** First: the exec's id (cancel it with POST …/execs/<id>/cancel and still read its result here). */
  | { type: 'started'; execId: string }
  | { type: 'output'; seq: number; stream: 'stdout' | 'stderr'; data: string; offset?: number }
  /** While a stream is past its inline head: its latest bytes (base64), at most every 2 s. */
  | { type: 'peek'; stream: 'stdout' | 'stderr'; data: string; totalBytes: number }
  | { type: 'result'; result: ExecOutcome }
  | { type: 'error'; error: { code: string; message: string; details?: Record<string, unknown> } };

export type ProgressStreamLine<T> =
  | { type: 'progress'; event: ProgressEvent }
  | { type: 'result'; result: T }
  | { type: 'error'; error: { code: string; message: string; details?: Record<string, unknown> } };
