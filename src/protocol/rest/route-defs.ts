/**
 * The /v1 route table as @hono/zod-openapi `createRoute` definitions, built from the same zod schemas
 * the handlers validate with (local-schemas.ts), so /openapi.json cannot drift from what is enforced.
 * Response schemas document the shapes the engine returns; they are not used to validate responses.
 */
import { createRoute, type RouteConfig } from '@hono/zod-openapi';
import { z } from 'zod';
import { RUNTIME_NAMES } from '../../domain/runtime-id.ts';
import {
  browserBody,
  buildImageBody,
  codeBody,
  createSandboxBody,
  defineTemplateBody,
  deleteQuery,
  diffBody,
  execBody,
  exposePortBody,
  extendBody,
  forkBody,
  importImageBody,
  killQuery,
  listQuery,
  listSandboxesQuery,
  mergeBody,
  mkdirBody,
  moveBody,
  NDJSON,
  pollQuery,
  pullImageBody,
  readQuery,
  resizeBody,
  snapshotBody,
  startExecBody,
  statQuery,
  stdinQuery,
  usageQuery,
  writeQuery,
} from './local-schemas.ts';

export const errorSchema = z.object({
  error: z.object({
    code: z.string().describe('a code from the error catalog, e.g. not_found, invalid_argument'),
    message: z.string().describe('what went wrong and what to do next'),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
});

const capabilitiesSchema = z.object({
  forkProcessState: z.boolean().describe("forks carry the Python REPL's memory"),
  pause: z.boolean(),
  limits: z.object({ memory: z.boolean(), pids: z.boolean(), cpu: z.boolean(), disk: z.boolean() }),
  network: z.boolean().describe('network egress is available'),
  forkProcesses: z.boolean().optional().describe('forks and snapshots carry every running process'),
  unsupported: z.array(z.string()).optional().describe('calls a sandbox of this runtime refuses'),
});
const portInfoSchema = z.object({ port: z.number(), hostPort: z.number(), address: z.string() });
const limits = z.object({ memoryBytes: z.number(), pids: z.number(), cpus: z.number() });
export const sandboxInfoSchema = z.object({
  id: z.string(),
  name: z.string(),
  namespace: z.string().describe('names are unique per namespace; `namespace/name` refers to it'),
  state: z.string(),
  image: z.string(),
  parentId: z.string().nullable(),
  depth: z.number(),
  limits,
  labels: z.record(z.string(), z.string()),
  createdAt: z.string(),
  expiresAt: z.string().nullable(),
  endReason: z.string().nullable(),
  persistent: z.boolean(),
  network: z.string(),
  ports: z.array(z.object({ port: z.number(), hostPort: z.number(), address: z.string() })).optional(),
  usage: z.record(z.string(), z.unknown()).optional(),
  runtime: z.enum(RUNTIME_NAMES).describe('the runtime that made it'),
  capabilities: capabilitiesSchema.describe('what that runtime can do').optional(),
});
const streamSummary = z.object({
  totalBytes: z.number(),
  shownBytes: z.number(),
  omittedBytes: z.number(),
  file: z.string().nullable().describe('the whole stream, inside the sandbox (read it in pages)'),
  spooledBytes: z.number(),
});
export const execOutcomeSchema = z.object({
  execId: z.string(),
  exitCode: z.number().nullable(),
  signal: z.number().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  truncated: z.boolean(),
  timedOut: z.boolean(),
  oomKilled: z.boolean(),
  cancelled: z.boolean(),
  durationMs: z.number(),
  streams: z.object({ stdout: streamSummary, stderr: streamSummary }).optional(),
  leftovers: z.number().describe('processes it left running; POST …/execs/{execId}/cancel ends them'),
});
const execRecord = z.object({
  id: z.string(),
  sandboxId: z.string(),
  command: z.array(z.string()),
  state: z.string(),
  exitCode: z.number().nullable(),
  signal: z.number().nullable(),
  timedOut: z.boolean(),
  truncated: z.boolean(),
  oomKilled: z.boolean(),
  startedAt: z.number(),
  endedAt: z.number().nullable(),
  leftovers: z.number(),
  tree: z.string().nullable(),
  streams: z.object({ stdout: streamSummary, stderr: streamSummary }).nullable(),
});
const okSchema = z.object({ ok: z.literal(true) });
const anyObject = z.record(z.string(), z.unknown());

const sandboxId = z.object({ id: z.string().min(1).max(256).describe('sandbox id or name') });
const execIds = sandboxId.extend({ execId: z.string().min(1).max(256) });
const imageName = z.object({ name: z.string().min(1).max(256) });
const templateName = z.object({ name: z.string().min(1).max(63).describe('template name') });
export const templateInfoSchema = z.object({
  name: z.string(),
  image: z.string(),
  prewarm: z.array(z.string()),
  pool: z.number().int().nullable(),
  builtin: z.boolean(),
  createdAt: z.string().nullable(),
  updatedAt: z.string().nullable(),
});

const json = (schema: z.ZodType, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});
const jsonBody = (schema: z.ZodType) => ({ content: { 'application/json': { schema } }, required: true });
const errors = {
  400: json(errorSchema, 'invalid input'),
  401: json(errorSchema, 'missing or unknown bearer token (HTTP listener with tokens)'),
  404: json(errorSchema, 'no such sandbox, exec, image or route (another tenant’s sandbox is not found)'),
  409: json(errorSchema, 'conflict with the sandbox state'),
  413: json(errorSchema, 'request body too large'),
  429: json(errorSchema, 'too many requests in flight for this tenant'),
  500: json(errorSchema, 'internal error'),
};

type Method = 'get' | 'post' | 'put' | 'delete';
function def(
  method: Method,
  path: string,
  summary: string,
  request: RouteConfig['request'],
  ok: { status?: 200 | 201; schema: z.ZodType; description?: string; ndjson?: boolean },
  tags: string[],
  /** Host-level operations: served on the local socket only, never on the TCP listener. */
  adminOnly = false,
): RouteConfig & { adminOnly: boolean } {
  const content: Record<string, { schema: z.ZodType }> = { 'application/json': { schema: ok.schema } };
  if (ok.ndjson) content[NDJSON] = { schema: z.string().describe('one JSON object per line') };
  return {
    ...createRoute({
      method,
      path,
      summary,
      tags,
      ...(request ? { request } : {}),
      responses: {
        [ok.status ?? 200]: { description: ok.description ?? summary, content },
        ...errors,
      },
    }),
    adminOnly,
  };
}

const S = ['sandboxes'];
const N = ['snapshots'];
const snapshotId = z.object({ id: z.string().min(1).max(256).describe('snapshot id or name') });
const E = ['execs'];
const F = ['files'];
const I = ['images'];
const T = ['templates'];
const M = ['system'];

/** Every /v1 route, keyed by a stable name the handlers (api-routes.ts) attach to. */
export const ROUTES = {
  system: def('get', '/v1/system', 'Engine status and sandbox counts', undefined, { schema: anyObject }, M),
  createSandbox: def(
    'post',
    '/v1/sandboxes',
    'Create a sandbox (Accept: application/x-ndjson streams the progress of an image pulled on first use)',
    { body: jsonBody(createSandboxBody) },
    { status: 201, schema: sandboxInfoSchema, ndjson: true },
    S,
  ),
  listSandboxes: def(
    'get',
    '/v1/sandboxes',
    'List sandboxes (repeat label=key=value to filter)',
    { query: listSandboxesQuery.extend({ label: z.string().optional() }) },
    { schema: z.array(sandboxInfoSchema) },
    S,
  ),
  getSandbox: def(
    'get',
    '/v1/sandboxes/{id}',
    'Get a sandbox',
    { params: sandboxId, query: usageQuery },
    { schema: sandboxInfoSchema },
    S,
  ),
  killSandbox: def(
    'delete',
    '/v1/sandboxes/{id}',
    'Kill a sandbox (cascade=1: its descendants too)',
    { params: sandboxId, query: killQuery },
    { schema: sandboxInfoSchema },
    S,
  ),
  pauseSandbox: def(
    'post',
    '/v1/sandboxes/{id}/pause',
    'Pause (freeze) a sandbox',
    { params: sandboxId },
    { schema: sandboxInfoSchema },
    S,
  ),
  resumeSandbox: def(
    'post',
    '/v1/sandboxes/{id}/resume',
    'Resume a paused sandbox',
    { params: sandboxId },
    { schema: sandboxInfoSchema },
    S,
  ),
  extendSandbox: def(
    'post',
    '/v1/sandboxes/{id}/extend',
    'Set a new TTL from now',
    { params: sandboxId, body: jsonBody(extendBody) },
    { schema: sandboxInfoSchema },
    S,
  ),
  diffSandboxes: def(
    'post',
    '/v1/sandboxes/diff',
    'Added, removed and modified paths between two sandboxes (or snapshots), from their layers',
    { body: jsonBody(diffBody) },
    { schema: anyObject },
    S,
  ),
  applyProject: def(
    'post',
    '/v1/sandboxes/{id}/project/apply',
    "Write a sandbox's project changes back to its host directory (local socket only)",
    { params: sandboxId },
    { schema: anyObject },
    S,
    true,
  ),
  exposePort: def(
    'post',
    '/v1/sandboxes/{id}/ports',
    "Publish a server on the sandbox's loopback port on the host's 127.0.0.2 (and at /v1/sandboxes/{id}/ports/{port}/ on the TCP listener)",
    { params: sandboxId, body: jsonBody(exposePortBody) },
    { schema: portInfoSchema },
    S,
  ),
  listPorts: def(
    'get',
    '/v1/sandboxes/{id}/ports',
    "A sandbox's published ports",
    { params: sandboxId },
    { schema: z.object({ ports: z.array(portInfoSchema) }) },
    S,
  ),
  forkSandbox: def(
    'post',
    '/v1/sandboxes/{id}/fork',
    'Fork a running sandbox into N children (files and live Python state)',
    { params: sandboxId, body: jsonBody(forkBody) },
    { status: 201, schema: anyObject },
    S,
  ),
  mergeSandbox: def(
    'post',
    '/v1/sandboxes/{id}/merge',
    "Keep a fork: the winner (a descendant) takes over this sandbox's id and name; this sandbox's old processes end",
    { params: sandboxId, body: jsonBody(mergeBody) },
    { schema: anyObject },
    S,
  ),
  createSnapshot: def(
    'post',
    '/v1/sandboxes/{id}/snapshots',
    'Snapshot a running sandbox: its files and a live copy of its Python REPL, under a name',
    { params: sandboxId, body: jsonBody(snapshotBody) },
    { status: 201, schema: anyObject },
    N,
  ),
  listSnapshots: def('get', '/v1/snapshots', 'List snapshots', undefined, { schema: z.array(anyObject) }, N),
  getSnapshot: def(
    'get',
    '/v1/snapshots/{id}',
    'One snapshot',
    { params: snapshotId },
    { schema: anyObject },
    N,
  ),
  deleteSnapshot: def(
    'delete',
    '/v1/snapshots/{id}',
    'Delete a snapshot (refused while sandboxes depend on it, unless cascade=1 kills them)',
    { params: snapshotId, query: killQuery },
    { schema: anyObject },
    N,
  ),
  restoreSnapshot: def(
    'post',
    '/v1/snapshots/{id}/restore',
    'Create N sandboxes from a snapshot (files, and Python state while the snapshot holds it)',
    { params: snapshotId, body: jsonBody(forkBody) },
    { status: 201, schema: anyObject },
    N,
  ),
  exec: def(
    'post',
    '/v1/sandboxes/{id}/exec',
    'Run a command to completion (Accept: application/x-ndjson streams output lines)',
    { params: sandboxId, body: jsonBody(execBody) },
    { schema: execOutcomeSchema, ndjson: true },
    E,
  ),
  startExec: def(
    'post',
    '/v1/sandboxes/{id}/execs',
    'Start a command in the background',
    { params: sandboxId, body: jsonBody(startExecBody) },
    { status: 201, schema: execRecord },
    E,
  ),
  listExecs: def(
    'get',
    '/v1/sandboxes/{id}/execs',
    'List a sandbox’s execs',
    { params: sandboxId },
    { schema: z.array(execRecord) },
    E,
  ),
  pollExec: def(
    'get',
    '/v1/sandboxes/{id}/execs/{execId}',
    'Poll a background exec’s output',
    { params: execIds, query: pollQuery },
    { schema: anyObject },
    E,
  ),
  writeStdin: def(
    'post',
    '/v1/sandboxes/{id}/execs/{execId}/stdin',
    'Write raw bytes to a background exec’s stdin',
    {
      params: execIds,
      query: stdinQuery,
      body: { content: { 'application/octet-stream': { schema: z.string() } } },
    },
    { schema: okSchema },
    E,
  ),
  resizeExec: def(
    'post',
    '/v1/sandboxes/{id}/execs/{execId}/resize',
    'Set the terminal size of a background exec started with tty',
    { params: execIds, body: jsonBody(resizeBody) },
    { schema: okSchema },
    E,
  ),
  cancelExec: def(
    'post',
    '/v1/sandboxes/{id}/execs/{execId}/cancel',
    'Cancel a background exec',
    { params: execIds },
    { schema: execRecord },
    E,
  ),
  browser: def(
    'post',
    '/v1/sandboxes/{id}/browser',
    'Act on the sandbox’s browser: open a URL (starting Chromium in the sandbox), snapshot, click/fill/select/press/scroll/wait_for by ref, screenshot, navigate, events, close',
    { params: sandboxId, body: jsonBody(browserBody) },
    { schema: anyObject },
    ['browser'],
  ),
  runCode: def(
    'post',
    '/v1/sandboxes/{id}/code',
    'Run code in the sandbox’s persistent REPL (Accept: application/x-ndjson streams output lines; closing the request cancels the code)',
    { params: sandboxId, body: jsonBody(codeBody) },
    { schema: anyObject, ndjson: true },
    ['code'],
  ),
  resetCode: def(
    'post',
    '/v1/sandboxes/{id}/code/reset',
    'Reset the REPL',
    { params: sandboxId },
    { schema: okSchema },
    ['code'],
  ),
  readFile: def(
    'get',
    '/v1/sandboxes/{id}/files/content',
    'Read a file (raw bytes, at most 64 MiB per call: page with offset/length). Headers: x-forkbox-file-size (the size at open), ETag (pass as If-Match to write safely); sparse=1 skips holes (x-forkbox-file-extents, x-forkbox-file-end)',
    { params: sandboxId, query: readQuery },
    { schema: z.string().describe('raw bytes (application/octet-stream)') },
    F,
  ),
  writeFile: def(
    'put',
    '/v1/sandboxes/{id}/files/content',
    'Write a file from the raw request body: replaces it atomically, or in place with append=1 or offset. If-Match: written only if the file still has that ETag (checked and written in one step; 409 conflict otherwise). Returns the new ETag (also in the ETag header)',
    {
      params: sandboxId,
      query: writeQuery,
      headers: z.object({
        'if-match': z.string().max(256).optional().describe('the ETag the file must still have'),
      }),
      body: { content: { 'application/octet-stream': { schema: z.string() } } },
    },
    { schema: z.object({ size: z.number(), etag: z.string() }) },
    F,
  ),
  listFiles: def(
    'get',
    '/v1/sandboxes/{id}/files/list',
    'List a directory',
    { params: sandboxId, query: listQuery },
    { schema: anyObject },
    F,
  ),
  statFile: def(
    'get',
    '/v1/sandboxes/{id}/files/stat',
    'Stat a path',
    { params: sandboxId, query: statQuery },
    { schema: anyObject },
    F,
  ),
  deleteFile: def(
    'delete',
    '/v1/sandboxes/{id}/files',
    'Delete a path',
    { params: sandboxId, query: deleteQuery },
    { schema: okSchema },
    F,
  ),
  mkdir: def(
    'post',
    '/v1/sandboxes/{id}/files/mkdir',
    'Create a directory (and parents)',
    { params: sandboxId, body: jsonBody(mkdirBody) },
    { schema: okSchema },
    F,
  ),
  moveFile: def(
    'post',
    '/v1/sandboxes/{id}/files/move',
    'Move or rename a path',
    { params: sandboxId, body: jsonBody(moveBody) },
    { schema: okSchema },
    F,
  ),
  listImages: def('get', '/v1/images', 'List images', undefined, { schema: z.array(anyObject) }, I),
  buildImage: def(
    'post',
    '/v1/images/build',
    'Build a Debian image (local socket only)',
    { body: jsonBody(buildImageBody) },
    { status: 201, schema: anyObject, ndjson: true },
    I,
    true,
  ),
  importImage: def(
    'post',
    '/v1/images/import',
    'Import an image from a host path (local socket only)',
    { body: jsonBody(importImageBody) },
    { status: 201, schema: anyObject, ndjson: true },
    I,
    true,
  ),
  pullImage: def(
    'post',
    '/v1/images/pull',
    'Pull an image from a registry (local socket only)',
    { body: jsonBody(pullImageBody) },
    { status: 201, schema: anyObject, ndjson: true },
    I,
    true,
  ),
  removeImage: def(
    'delete',
    '/v1/images/{name}',
    'Remove an image (local socket only)',
    { params: imageName },
    { schema: okSchema },
    I,
    true,
  ),
  listTemplates: def(
    'get',
    '/v1/templates',
    'List template configs (built-in default first)',
    undefined,
    { schema: z.array(templateInfoSchema) },
    T,
  ),
  defineTemplate: def(
    'post',
    '/v1/templates',
    'Define or replace a template config: an image and Python modules to pre-import (local socket only)',
    { body: jsonBody(defineTemplateBody) },
    { status: 201, schema: templateInfoSchema },
    T,
    true,
  ),
  deleteTemplate: def(
    'delete',
    '/v1/templates/{name}',
    'Delete a template config; refused while live sandboxes use it (local socket only)',
    { params: templateName },
    { schema: z.object({ deleted: z.string() }) },
    T,
    true,
  ),
  gc: def('post', '/v1/gc', 'Garbage-collect (local socket only)', undefined, { schema: anyObject }, M, true),
  df: def('get', '/v1/df', 'Disk usage (local socket only)', undefined, { schema: anyObject }, M, true),
} as const;

export type RouteName = keyof typeof ROUTES;

/** `/v1/sandboxes/{id}` → `/v1/sandboxes/:id` (Hono's path syntax). */
export function honoPath(openApiPath: string): string {
  return openApiPath.replace(/\{([^}]+)\}/g, ':$1');
}
