/**
 * The /v1 handlers, one per ForkboxApi method, mounted on any Hono app from the route table in
 * route-defs.ts. The local socket (local-app.ts) and the TCP listener (protocol/http/app.ts) both mount
 * them; each passes `api(c)`, the API as seen by the request's caller (its session, or its tenant).
 */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { Context, Handler, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { stream } from 'hono/streaming';
import { ForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi, ProgressEvent } from '../../service/api.ts';
import type { ExecOutputChunk, ExecPeek } from '../../service/ports.ts';
import { toHttpError } from './errors.ts';
import {
  buildImageBody,
  codeBody,
  createSandboxBody,
  defineTemplateBody,
  deleteQuery,
  diffBody,
  EXEC_BODY_LIMIT,
  execBody,
  exposePortBody,
  extendBody,
  FILE_SIZE_HEADER,
  forkBody,
  importImageBody,
  JSON_BODY_LIMIT,
  killQuery,
  labelPair,
  listQuery,
  listSandboxesQuery,
  mergeBody,
  mkdirBody,
  moveBody,
  NDJSON,
  parseOrThrow,
  pollQuery,
  pullImageBody,
  RAW_BODY_LIMIT,
  readQuery,
  snapshotBody,
  startExecBody,
  statQuery,
  stdinQuery,
  usageQuery,
  writeQuery,
} from './local-schemas.ts';
import { honoPath, ROUTES, type RouteName } from './route-defs.ts';
import { FILE_END_HEADER, FILE_EXTENTS_HEADER, formatExtents, quoteEtag, unquoteEtag } from './wire.ts';

function tooLarge(limit: number): ForkboxError {
  return new ForkboxError(
    'too_large',
    `request body is larger than ${limit} bytes. Send less per request (split files into parts, or write stdin in chunks).`,
    { limitBytes: limit },
  );
}

/** Bound every body: large raw bodies only where raw bytes are expected, 1 MiB JSON elsewhere. */
export function bodyLimitFor(method: string, path: string): number {
  if (method === 'PUT' && path.endsWith('/files/content')) return RAW_BODY_LIMIT;
  if (method === 'POST' && /\/execs\/[^/]+\/stdin$/.test(path)) return RAW_BODY_LIMIT;
  if (method === 'POST' && path.endsWith('/exec')) return EXEC_BODY_LIMIT;
  return JSON_BODY_LIMIT;
}

/** Middleware: refuse bodies over `limit(method, path)` with a `too_large` error (413) before reading them. */
export function bodyLimits(
  limit: (method: string, path: string) => number = bodyLimitFor,
): MiddlewareHandler {
  return async (c, next) => {
    const max = limit(c.req.method, c.req.path);
    return bodyLimit({ maxSize: max, onError: () => Promise.reject(tooLarge(max)) })(c, next);
  };
}

async function jsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new ForkboxError('invalid_argument', 'request body is not valid JSON. Send a JSON object.');
  }
}

async function rawBody(c: Context): Promise<Buffer> {
  return Buffer.from(await c.req.arrayBuffer());
}

function wantsNdjson(c: Context): boolean {
  return (c.req.header('accept') ?? '').includes(NDJSON);
}

/** Stream `run`'s events as NDJSON lines, then one `result` (or `error`) line. */
function ndjson<T>(c: Context, run: (emit: (line: object) => void) => Promise<T>): Response {
  c.header('Content-Type', NDJSON);
  c.header('Cache-Control', 'no-store');
  return stream(c, async (s) => {
    // Chain writes so lines keep their order even though producers call emit() synchronously.
    let chain: Promise<unknown> = Promise.resolve();
    const emit = (line: object) => {
      // A client gone mid-stream fails the write: later lines are dropped, the work ends on its own signal.
      chain = chain.then(() => s.write(`${JSON.stringify(line)}\n`)).catch(() => undefined);
    };
    try {
      const result = await run(emit);
      emit({ type: 'result', result });
    } catch (e) {
      emit({ type: 'error', ...toHttpError(e).body });
    }
    await chain;
  });
}

const chunkLine = (ch: ExecOutputChunk) => ({
  type: 'output',
  seq: ch.seq,
  stream: ch.stream,
  data: ch.data.toString('base64'),
  ...(ch.offset === undefined ? {} : { offset: ch.offset }),
});
const peekLine = (p: ExecPeek) => ({
  type: 'peek',
  stream: p.stream,
  data: p.data.toString('base64'),
  totalBytes: p.totalBytes,
});

/** zod leaves absent optional keys as `undefined`; the API types (exactOptionalPropertyTypes) want them absent. */
type StripUndefined<T> = { [K in keyof T as undefined extends T[K] ? never : K]: T[K] } & {
  [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined>;
};
export function stripUndefined<T extends object>(o: T): StripUndefined<T> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out as StripUndefined<T>;
}

type ApiFor = (c: Context) => ForkboxApi;

function handlers(A: ApiFor): Record<RouteName, Handler> {
  const id = (c: Context) => c.req.param('id') as string;
  const execId = (c: Context) => c.req.param('execId') as string;
  return {
    system: async (c) => c.json(await A(c).status()),
    createSandbox: async (c) => {
      const body = parseOrThrow(createSandboxBody, await jsonBody(c), 'sandbox request');
      return c.json(await A(c).createSandbox(stripUndefined(body)), 201);
    },
    listSandboxes: async (c) => {
      const q = parseOrThrow(listSandboxesQuery, c.req.query(), 'query');
      const labels: Record<string, string> = {};
      for (const raw of c.req.queries('label') ?? []) {
        const pair = parseOrThrow(labelPair, raw, 'label filter');
        const i = pair.indexOf('=');
        labels[pair.slice(0, i)] = pair.slice(i + 1);
      }
      const filter: { all?: boolean; labels?: Record<string, string> } = {};
      if (q.all !== undefined) filter.all = q.all;
      if (Object.keys(labels).length > 0) filter.labels = labels;
      return c.json(await A(c).listSandboxes(filter));
    },
    getSandbox: async (c) => {
      const q = parseOrThrow(usageQuery, c.req.query(), 'query');
      return c.json(await A(c).getSandbox(id(c), q.usage ? { usage: true } : {}));
    },
    killSandbox: async (c) => {
      const q = parseOrThrow(killQuery, c.req.query(), 'query');
      const cascade = q.cascade === '1' || q.cascade === 'true';
      return c.json(await A(c).killSandbox(id(c), cascade ? { cascade: true } : {}));
    },
    diffSandboxes: async (c) => {
      const { a, b, ...rest } = parseOrThrow(diffBody, await jsonBody(c), 'diff request');
      return c.json(await A(c).diffSandboxes(a, b, stripUndefined(rest)));
    },
    applyProject: async (c) => c.json(await A(c).applyProject(id(c))),
    exposePort: async (c) => {
      const body = parseOrThrow(exposePortBody, await jsonBody(c), 'port request');
      return c.json(await A(c).exposePort(id(c), body.port, stripUndefined({ hostPort: body.hostPort })));
    },
    listPorts: async (c) => c.json({ ports: await A(c).listPorts(id(c)) }),
    forkSandbox: async (c) => {
      const body = parseOrThrow(forkBody, await jsonBody(c), 'fork request');
      return c.json(await A(c).forkSandbox(id(c), stripUndefined(body)), 201);
    },
    mergeSandbox: async (c) => {
      const body = parseOrThrow(mergeBody, await jsonBody(c), 'merge request');
      return c.json(await A(c).mergeSandbox(id(c), body.winner));
    },
    createSnapshot: async (c) => {
      const body = parseOrThrow(snapshotBody, await jsonBody(c), 'snapshot request');
      return c.json(await A(c).createSnapshot(id(c), stripUndefined(body)), 201);
    },
    listSnapshots: async (c) => c.json(await A(c).listSnapshots()),
    getSnapshot: async (c) => c.json(await A(c).getSnapshot(id(c))),
    deleteSnapshot: async (c) => {
      const q = parseOrThrow(killQuery, c.req.query(), 'query');
      const cascade = q.cascade === '1' || q.cascade === 'true';
      return c.json(await A(c).deleteSnapshot(id(c), cascade ? { cascade: true } : {}));
    },
    restoreSnapshot: async (c) => {
      const body = parseOrThrow(forkBody, await jsonBody(c), 'restore request');
      return c.json(await A(c).restoreSnapshot(id(c), stripUndefined(body)), 201);
    },
    pauseSandbox: async (c) => c.json(await A(c).pauseSandbox(id(c))),
    resumeSandbox: async (c) => c.json(await A(c).resumeSandbox(id(c))),
    extendSandbox: async (c) => {
      const body = parseOrThrow(extendBody, await jsonBody(c), 'extend request');
      return c.json(await A(c).extendSandbox(id(c), body.ttlSeconds));
    },
    exec: async (c) => {
      const { stdin, ...rest } = parseOrThrow(execBody, await jsonBody(c), 'exec request');
      const req = {
        ...stripUndefined(rest),
        ...(stdin === undefined ? {} : { stdin: Buffer.from(stdin, 'base64') }),
      };
      // A client that goes away (disconnect, Ctrl-C of the CLI) cancels the command's whole process tree.
      const signal = c.req.raw.signal;
      if (!wantsNdjson(c)) return c.json(await A(c).exec(id(c), req, { signal }));
      return ndjson(c, (emit) =>
        A(c).exec(id(c), req, {
          signal,
          onStarted: (execId) => emit({ type: 'started', execId }),
          onOutput: (ch) => emit(chunkLine(ch)),
          onPeek: (p) => emit(peekLine(p)),
        }),
      );
    },
    startExec: async (c) => {
      const body = parseOrThrow(startExecBody, await jsonBody(c), 'exec request');
      return c.json(await A(c).startExec(id(c), stripUndefined(body)), 201);
    },
    listExecs: async (c) => c.json(await A(c).listExecs(id(c))),
    pollExec: async (c) => {
      const q = parseOrThrow(pollQuery, c.req.query(), 'query');
      const o: { afterSeq?: number; waitMs?: number } = {};
      if (q.after_seq !== undefined) o.afterSeq = q.after_seq;
      if (q.wait_ms !== undefined) o.waitMs = q.wait_ms;
      return c.json(await A(c).pollExec(id(c), execId(c), o));
    },
    writeStdin: async (c) => {
      const q = parseOrThrow(stdinQuery, c.req.query(), 'query');
      await A(c).writeExecStdin(id(c), execId(c), await rawBody(c), q.eof ?? false);
      return c.json({ ok: true });
    },
    cancelExec: async (c) => c.json(await A(c).cancelExec(id(c), execId(c))),
    runCode: async (c) => {
      const req = stripUndefined(parseOrThrow(codeBody, await jsonBody(c), 'code request'));
      // A client that goes away cancels the code (KeyboardInterrupt, then a REPL restart if it must).
      const signal = c.req.raw.signal;
      if (!wantsNdjson(c)) return c.json(await A(c).runCode(id(c), req, { signal }));
      return ndjson(c, (emit) => A(c).runCode(id(c), req, { signal, onOutput: (ch) => emit(chunkLine(ch)) }));
    },
    resetCode: async (c) => {
      await A(c).resetCode(id(c));
      return c.json({ ok: true });
    },
    readFile: async (c) => {
      const q = parseOrThrow(readQuery, c.req.query(), 'query');
      const r = await A(c).readFile(
        id(c),
        q.path,
        stripUndefined({ offset: q.offset, length: q.length, sparse: q.sparse }),
      );
      const { data } = r;
      // A Buffer may view a pooled or shared ArrayBuffer; hand Hono exactly the file's bytes.
      const bytes = new Uint8Array(data.buffer as ArrayBuffer, data.byteOffset, data.byteLength);
      const headers: Record<string, string> = {
        'Content-Type': 'application/octet-stream',
        [FILE_SIZE_HEADER]: String(r.size),
        ETag: quoteEtag(r.etag),
      };
      if (r.extents !== undefined) headers[FILE_EXTENTS_HEADER] = formatExtents(r.extents);
      if (r.end !== undefined) headers[FILE_END_HEADER] = String(r.end);
      return c.body(bytes, 200, headers);
    },
    writeFile: async (c) => {
      const q = parseOrThrow(writeQuery, c.req.query(), 'query');
      const data = await rawBody(c);
      const ifMatch = c.req.header('if-match');
      const opts = stripUndefined({
        mode: q.mode,
        createDirs: q.create_dirs,
        append: q.append,
        offset: q.offset,
        ifMatch: ifMatch === undefined ? undefined : unquoteEtag(ifMatch),
      });
      const r = await A(c).writeFile(id(c), q.path, data, opts);
      c.header('ETag', quoteEtag(r.etag));
      return c.json(r);
    },
    listFiles: async (c) => {
      const q = parseOrThrow(listQuery, c.req.query(), 'query');
      return c.json(await A(c).listFiles(id(c), q.path, stripUndefined({ recursive: q.recursive })));
    },
    statFile: async (c) => {
      const q = parseOrThrow(statQuery, c.req.query(), 'query');
      const st = await A(c).statFile(id(c), q.path);
      if (st.etag !== undefined) c.header('ETag', quoteEtag(st.etag));
      return c.json(st);
    },
    deleteFile: async (c) => {
      const q = parseOrThrow(deleteQuery, c.req.query(), 'query');
      await A(c).deleteFile(id(c), q.path, stripUndefined({ recursive: q.recursive }));
      return c.json({ ok: true });
    },
    mkdir: async (c) => {
      const body = parseOrThrow(mkdirBody, await jsonBody(c), 'mkdir request');
      await A(c).mkdir(id(c), body.path);
      return c.json({ ok: true });
    },
    moveFile: async (c) => {
      const body = parseOrThrow(moveBody, await jsonBody(c), 'move request');
      await A(c).moveFile(id(c), body.from, body.to, stripUndefined({ overwrite: body.overwrite }));
      return c.json({ ok: true });
    },
    listImages: async (c) => c.json(await A(c).listImages()),
    buildImage: async (c) => {
      const body = stripUndefined(parseOrThrow(buildImageBody, await jsonBody(c), 'image build request'));
      if (!wantsNdjson(c)) return c.json(await A(c).buildImage(body), 201);
      return ndjson(c, (emit) =>
        A(c).buildImage(body, (event: ProgressEvent) => emit({ type: 'progress', event })),
      );
    },
    importImage: async (c) => {
      const body = parseOrThrow(importImageBody, await jsonBody(c), 'image import request');
      if (!wantsNdjson(c)) return c.json(await A(c).importImage(body.name, body.source), 201);
      return ndjson(c, (emit) =>
        A(c).importImage(body.name, body.source, (event: ProgressEvent) => emit({ type: 'progress', event })),
      );
    },
    pullImage: async (c) => {
      const body = parseOrThrow(pullImageBody, await jsonBody(c), 'image pull request');
      if (!wantsNdjson(c)) return c.json(await A(c).pullImage(body.ref), 201);
      return ndjson(c, (emit) =>
        A(c).pullImage(body.ref, (event: ProgressEvent) => emit({ type: 'progress', event })),
      );
    },
    removeImage: async (c) => {
      await A(c).removeImage(c.req.param('name') as string);
      return c.json({ ok: true });
    },
    listTemplates: async (c) => c.json(await A(c).listTemplates()),
    defineTemplate: async (c) => {
      const body = parseOrThrow(defineTemplateBody, await jsonBody(c), 'template definition');
      return c.json(await A(c).defineTemplate(stripUndefined(body)), 201);
    },
    deleteTemplate: async (c) => c.json(await A(c).deleteTemplate(c.req.param('name') as string)),
    gc: async (c) => c.json(await A(c).gc()),
    df: async (c) => c.json(await A(c).df()),
  };
}

export interface MountApiOptions {
  /** The API as seen by this request's caller. */
  api: ApiFor;
  /**
   * Serve host-level operations (image build/import/remove, template define/delete, gc, df). Only the
   * local socket does: image import reads any host path as the daemon (root), and gc/df/image removal and
   * template configs act across tenants (each template config may start a template container). Without
   * this flag those routes answer `permission_denied` and are left out of the OpenAPI document.
   */
  admin: boolean;
}

/** Mount every /v1 route on `app` and register it in the app's OpenAPI registry. */
export function mountApiRoutes(app: OpenAPIHono, opts: MountApiOptions): void {
  const h = handlers(opts.api);
  for (const [name, route] of Object.entries(ROUTES) as [RouteName, (typeof ROUTES)[RouteName]][]) {
    const served = opts.admin || !route.adminOnly;
    const { adminOnly: _, ...config } = route;
    if (served) app.openAPIRegistry.registerPath(config);
    const handler: Handler = served
      ? h[name]
      : () => {
          throw new ForkboxError(
            'permission_denied',
            `${route.method.toUpperCase()} ${route.path} is a host administration route, served only on the daemon's local socket. Run the matching 'forkbox' command on the host.`,
          );
        };
    app.on(route.method.toUpperCase(), honoPath(route.path), handler);
  }
}
