/**
 * Wire schemas of the local API (/v1): request bodies and query strings, validated with zod at the
 * edge so the engine never sees unbounded or mistyped input. Also the NDJSON line shapes shared by the
 * server (local-app.ts) and the client (transports/daemon-client.ts).
 */

import { z } from 'zod';
import { ForkboxError } from '../../domain/errors.ts';
import { LIMITS, PORTS, REGISTRY, SIZES } from '../../domain/limits.ts';
import { RUNTIME_NAMES } from '../../domain/runtime-id.ts';
import { MiB } from '../../domain/sizes.ts';
import type { ExecOutcome, ProgressEvent } from '../../service/api.ts';
import { DIFF_PAGE_MAX } from '../../service/diff/diff-pages.ts';
import {
  boundedNumber,
  boundedQueryNumber,
  envSchema,
  labelsSchema,
  nameSchema,
  namespaceSchema,
  pathSchema,
  refSchema,
} from '../bounds.ts';

/** JSON request bodies. */
export const JSON_BODY_LIMIT = 1 * MiB;
/** Sync exec bodies carry stdin as base64 inside the JSON. */
export const EXEC_BODY_LIMIT = 16 * MiB;
/** Raw bodies: file contents and exec stdin chunks. */
export const RAW_BODY_LIMIT = 64 * MiB;
export { FILE_SIZE_HEADER, NDJSON } from './wire.ts';

const name = z.string().min(1).max(256);
const base64 = z
  .string()
  .max(EXEC_BODY_LIMIT)
  .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');

export const createSandboxBody = z.strictObject({
  image: name.optional(),
  name: nameSchema().optional(),
  memoryMb: boundedNumber(LIMITS.memoryMb).optional(),
  cpus: boundedNumber(LIMITS.cpus).optional(),
  pids: boundedNumber(LIMITS.pids).optional(),
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
  ttlSeconds: boundedNumber(LIMITS.ttlSeconds).optional(),
  env: envSchema().optional(),
  labels: labelsSchema().optional(),
  persistent: z.boolean().optional(),
  ports: z
    .array(boundedNumber(LIMITS.port))
    .max(PORTS.perSandbox)
    .optional()
    .describe('loopback ports to publish on free host ports (see POST /v1/sandboxes/{id}/ports)'),
  template: nameSchema().describe('a template name (see GET /v1/templates)').optional(),
  namespace: namespaceSchema().optional(),
  network: z
    .string()
    .max(SIZES.networkChars)
    .describe(
      "'none' (default: loopback only) or 'allow:' + names, *.suffix wildcards, CIDRs (egress through the daemon's proxy)",
    )
    .optional(),
  project: z
    .string()
    .min(1)
    .max(2 * SIZES.pathChars)
    .describe('host directory under a project root, as "DIR" or "DIR:/path" (default /work)')
    .optional(),
  runtime: z
    .enum(RUNTIME_NAMES)
    .describe(
      "the runtime that makes it (default: the daemon's, native): native forks files and the Python REPL in milliseconds, gvisor (runsc) forks carry every running process; GET /v1/system lists the runtimes this daemon has",
    )
    .optional(),
});

/** POST /v1/templates (DefineTemplateRequest); the engine checks module names in detail. */
export const defineTemplateBody = z.strictObject({
  name: createSandboxBody.shape.template.unwrap(),
  image: name.optional(),
  prewarm: z.array(z.string().min(1).max(200)).max(64).optional(),
  pool: boundedNumber(LIMITS.pool).optional(),
});

export const extendBody = z.strictObject({ ttlSeconds: boundedNumber(LIMITS.ttlSeconds) });

/** POST /v1/sandboxes/{id}/fork (ForkRequest). */
export const forkBody = z.strictObject({
  n: boundedNumber(LIMITS.forkChildren).optional(),
  names: z.array(nameSchema()).min(1).max(LIMITS.forkChildren.max).optional(),
  memoryMb: createSandboxBody.shape.memoryMb,
  cpus: createSandboxBody.shape.cpus,
  pids: createSandboxBody.shape.pids,
  diskMb: createSandboxBody.shape.diskMb,
  diskInodes: createSandboxBody.shape.diskInodes,
  ttlSeconds: createSandboxBody.shape.ttlSeconds,
  env: envSchema().optional(),
  labels: labelsSchema().optional(),
  wait: z.boolean().optional(),
});
/** POST /v1/sandboxes/diff: the two sides (sandbox or snapshot ids or names) and a DiffRequest. */
export const diffBody = z.strictObject({
  a: refSchema(),
  b: refSchema(),
  paths: z.array(pathSchema()).max(64).optional(),
  unifiedFor: pathSchema().optional(),
  project: z.boolean().optional(),
  patch: z.boolean().optional(),
  limit: z
    .number()
    .int()
    .min(1)
    .max(DIFF_PAGE_MAX)
    .optional()
    .describe('entries per answer (default 10,000)'),
  cursor: z.string().max(64).optional().describe('the nextCursor of the answer before'),
});
export const killQuery = z.object({
  cascade: z.enum(['1', '0', 'true', 'false']).optional(),
  namespace: namespaceSchema().describe('the namespace a name is looked up in').optional(),
});
export const snapshotBody = z.strictObject({ name: createSandboxBody.shape.name });
export const mergeBody = z.strictObject({ winner: refSchema() });

export const exposePortBody = z.strictObject({
  port: boundedNumber(LIMITS.port),
  hostPort: boundedNumber(LIMITS.hostPort).optional().describe('default: a free host port'),
});

const execCommon = {
  argv: z.array(z.string().max(SIZES.argChars)).min(1).max(SIZES.argvEntries).optional(),
  cmd: z.string().min(1).max(SIZES.cmdChars).optional(),
  cwd: pathSchema().optional(),
  env: envSchema().optional(),
  timeoutSeconds: boundedNumber(LIMITS.timeoutSeconds).optional(),
  /** Inline output per stream (head + tail); the rest is in a spool file inside the sandbox. */
  maxOutputBytes: boundedNumber(LIMITS.maxOutputBytes).optional(),
  /** Bytes of each stream kept in the spool file inside the sandbox. */
  spoolBytes: boundedNumber(LIMITS.spoolBytes).optional(),
  idempotencyKey: z.string().min(1).max(SIZES.idempotencyKeyChars).optional(),
};
/** A background exec may run under a pseudo-terminal of this size (typed into through its stdin). */
const ttySize = z.strictObject({ rows: boundedNumber(LIMITS.ttyRows), cols: boundedNumber(LIMITS.ttyCols) });
const oneCommand = (b: { argv?: string[] | undefined; cmd?: string | undefined }) =>
  (b.argv === undefined) !== (b.cmd === undefined);
const oneCommandMsg = { message: 'give exactly one of argv (a list) or cmd (a shell string)' };

export const execBody = z
  .strictObject({ ...execCommon, stdin: base64.optional() })
  .refine(oneCommand, oneCommandMsg);
export const startExecBody = z
  .strictObject({ ...execCommon, stdin: z.boolean().optional(), tty: ttySize.optional() })
  .refine(oneCommand, oneCommandMsg);

export const codeBody = z.strictObject({
  language: z.enum(['python', 'bash', 'node', 'nodejs']).optional(),
  code: z.string().max(SIZES.codeChars),
  timeoutSeconds: boundedNumber(LIMITS.timeoutSeconds).optional(),
  maxOutputBytes: boundedNumber(LIMITS.maxOutputBytes).optional(),
});

const path = pathSchema();
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
  browser: z
    .boolean()
    .optional()
    .describe('the browser variant: Chromium and fonts on top (default name debian-browser)'),
});
export const importImageBody = z.strictObject({ name, source: pathSchema() });
export const pullImageBody = z.strictObject({ ref: z.string().min(1).max(REGISTRY.refChars) });

// ── query strings ──
const flag = z.enum(['1', '0', 'true', 'false']).transform((v) => v === '1' || v === 'true');
const uint = (max: number) =>
  z
    .string()
    .regex(/^\d{1,15}$/, 'a non-negative integer')
    .transform(Number)
    .refine((n) => n <= max, `at most ${max}`);

export const listSandboxesQuery = z.object({
  all: flag.optional(),
  namespace: namespaceSchema({ all: true })
    .describe("one namespace, or '*' for all (default: the caller's)")
    .optional(),
});
export const usageQuery = z.object({ usage: flag.optional() });
/** A terminal's new size (POST /v1/sandboxes/{id}/execs/{execId}/resize). */
export const resizeBody = z.strictObject({
  rows: boundedNumber(LIMITS.ttyRows),
  cols: boundedNumber(LIMITS.ttyCols),
});

export const pollQuery = z.object({
  after_seq: boundedQueryNumber(LIMITS.afterSeq).optional(),
  wait_ms: boundedQueryNumber(LIMITS.pollWaitMs).optional(),
});
export const stdinQuery = z.object({ eof: flag.optional() });
export const readQuery = z.object({
  path,
  offset: uint(Number.MAX_SAFE_INTEGER).optional(),
  length: uint(RAW_BODY_LIMIT).optional(),
  /** Skip holes: the body is the data extents, listed in x-forkbox-file-extents. */
  sparse: flag.optional(),
});
export const writeQuery = z.object({
  path,
  mode: z
    .string()
    .regex(/^[0-7]{1,4}$/, 'an octal mode such as 644')
    .transform((m) => Number.parseInt(m, 8))
    .optional(),
  create_dirs: flag.optional(),
  /** Write in place: at the end (append) or at a byte offset (at most the size), not replacing the file. */
  append: flag.optional(),
  offset: uint(Number.MAX_SAFE_INTEGER).optional(),
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

const selector = z.string().min(1).max(1024).describe('a CSS selector (the first match), instead of ref');
const ref = z.string().regex(/^(f\d{1,4})?e\d{1,7}$/, 'a ref from the latest snapshot, e.g. e12');
/** One browser action (POST /v1/sandboxes/{id}/browser; domain/browser.ts). */
export const browserBody = z.discriminatedUnion('action', [
  z.strictObject({ action: z.literal('open'), url: z.string().min(1).max(8192) }),
  z.strictObject({ action: z.literal('snapshot') }),
  z.strictObject({ action: z.literal('click'), ref: ref.optional(), selector: selector.optional() }),
  z.strictObject({
    action: z.literal('fill'),
    ref: ref.optional(),
    selector: selector.optional(),
    value: z.string().max(64 * 1024),
  }),
  z.strictObject({ action: z.literal('select'), ref, values: z.array(z.string().max(1024)).min(1).max(64) }),
  z.strictObject({ action: z.literal('press'), key: z.string().min(1).max(64), ref: ref.optional() }),
  z.strictObject({
    action: z.literal('scroll'),
    ref: ref.optional(),
    dy: z.number().int().min(-100_000).max(100_000).optional(),
  }),
  z.strictObject({
    action: z.literal('wait_for'),
    ref: ref.optional(),
    text: z.string().min(1).max(1024).optional(),
    timeoutMs: z.number().int().min(1).max(60_000).optional(),
  }),
  z.strictObject({ action: z.literal('screenshot'), fullPage: z.boolean().optional() }),
  z.strictObject({ action: z.literal('navigate'), to: z.enum(['back', 'forward', 'reload']) }),
  z.strictObject({
    action: z.literal('events'),
    since: z.number().int().min(0).optional(),
    limit: z.number().int().min(1).max(1000).optional(),
  }),
  z.strictObject({ action: z.literal('close') }),
]);
