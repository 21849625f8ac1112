/**
 * The daemon's local API: resource-oriented JSON routes under /v1, one per ForkboxApi method, served on
 * the daemon's Unix socket (transports/unix-server.ts) and called by transports/daemon-client.ts.
 * Later issues add MCP, auth and a TCP listener to this same app, hence a factory.
 */
import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { stream, streamText } from 'hono/streaming';
import { ForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi, ProgressEvent } from '../../service/api.ts';
import type { ExecOutputChunk } from '../../service/ports.ts';
import { toHttpError } from './errors.ts';
import {
  buildImageBody,
  codeBody,
  createSandboxBody,
  deleteQuery,
  EXEC_BODY_LIMIT,
  execBody,
  extendBody,
  FILE_SIZE_HEADER,
  importImageBody,
  JSON_BODY_LIMIT,
  labelPair,
  listQuery,
  listSandboxesQuery,
  mkdirBody,
  moveBody,
  NDJSON,
  parseOrThrow,
  pollQuery,
  RAW_BODY_LIMIT,
  readQuery,
  startExecBody,
  statQuery,
  stdinQuery,
  usageQuery,
  writeQuery,
} from './local-schemas.ts';

export interface LocalAppOptions {
  /** Reported by /healthz. */
  version?: string;
  /** Client sessions (the daemon's engine): requests naming a session act in it. */
  sessions?: {
    scoped(session: string): ForkboxApi;
    attach(session: string): () => void;
  };
}

function tooLarge(limit: number): ForkboxError {
  return new ForkboxError(
    'too_large',
    `request body is larger than ${limit} bytes. Send less per request (split files into parts, or write stdin in chunks).`,
    { limitBytes: limit },
  );
}

/** Bound every body: large raw bodies only where raw bytes are expected, 1 MiB JSON elsewhere. */
function limitFor(method: string, path: string): number {
  if (method === 'PUT' && path.endsWith('/files/content')) return RAW_BODY_LIMIT;
  if (method === 'POST' && /\/execs\/[^/]+\/stdin$/.test(path)) return RAW_BODY_LIMIT;
  if (method === 'POST' && path.endsWith('/exec')) return EXEC_BODY_LIMIT;
  return JSON_BODY_LIMIT;
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
      chain = chain.then(() => s.write(`${JSON.stringify(line)}\n`));
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
});

/** Header naming the client session a request belongs to (see `sessions` in LocalAppOptions). */
export const SESSION_HEADER = 'x-forkbox-session';
const SESSION_RE = /^[A-Za-z0-9_-]{8,64}$/;

function sessionOf(c: Context): string | undefined {
  const s = c.req.header(SESSION_HEADER);
  if (s === undefined) return undefined;
  if (!SESSION_RE.test(s)) {
    throw new ForkboxError('invalid_argument', `${SESSION_HEADER} must be 8-64 letters, digits, '_' or '-'.`);
  }
  return s;
}

export function createLocalApp(api: ForkboxApi, opts: LocalAppOptions = {}): Hono {
  const app = new Hono();
  /** The API as seen by this request's caller (its session, when it names one). */
  const A = (c: Context): ForkboxApi => {
    const session = sessionOf(c);
    return session !== undefined && opts.sessions ? opts.sessions.scoped(session) : api;
  };

  app.onError((err, c) => {
    const { status, body } = toHttpError(err);
    return c.json(body, status);
  });
  app.notFound((c) =>
    c.json(
      toHttpError(
        new ForkboxError('not_found', `no route ${c.req.method} ${c.req.path}. See the local API in docs.`),
      ).body,
      404,
    ),
  );

  app.use('*', async (c, next) => {
    const limit = limitFor(c.req.method, c.req.path);
    return bodyLimit({ maxSize: limit, onError: () => Promise.reject(tooLarge(limit)) })(c, next);
  });

  // A client session stays attached while this request is open; when the client goes away (process
  // exit, crash, disconnect), its non-persistent sandboxes are killed after a short grace.
  app.post('/v1/sessions/:sid/attach', (c) => {
    const sid = c.req.param('sid');
    if (!SESSION_RE.test(sid) || !opts.sessions) {
      throw new ForkboxError('invalid_argument', 'session ids are 8-64 letters, digits, _ or -.');
    }
    const detach = opts.sessions.attach(sid);
    return streamText(c, async (stream) => {
      stream.onAbort(detach);
      await stream.writeln(JSON.stringify({ type: 'attached', session: sid }));
      while (!stream.aborted && !stream.closed) {
        await stream.sleep(15_000);
        await stream.writeln(JSON.stringify({ type: 'heartbeat' }));
      }
      detach();
    });
  });

  app.get('/healthz', (c) => c.json({ ok: true, version: opts.version ?? null }));
  app.get('/v1/system', async (c) => c.json(await A(c).status()));

  // ── sandboxes ──
  app.post('/v1/sandboxes', async (c) => {
    const body = parseOrThrow(createSandboxBody, await jsonBody(c), 'sandbox request');
    return c.json(await A(c).createSandbox(stripUndefined(body)), 201);
  });
  app.get('/v1/sandboxes', async (c) => {
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
  });
  app.get('/v1/sandboxes/:id', async (c) => {
    const q = parseOrThrow(usageQuery, c.req.query(), 'query');
    return c.json(await A(c).getSandbox(c.req.param('id'), q.usage ? { usage: true } : {}));
  });
  app.delete('/v1/sandboxes/:id', async (c) => c.json(await A(c).killSandbox(c.req.param('id'))));
  app.post('/v1/sandboxes/:id/pause', async (c) => c.json(await A(c).pauseSandbox(c.req.param('id'))));
  app.post('/v1/sandboxes/:id/resume', async (c) => c.json(await A(c).resumeSandbox(c.req.param('id'))));
  app.post('/v1/sandboxes/:id/extend', async (c) => {
    const body = parseOrThrow(extendBody, await jsonBody(c), 'extend request');
    return c.json(await A(c).extendSandbox(c.req.param('id'), body.ttlSeconds));
  });

  // ── execs ──
  app.post('/v1/sandboxes/:id/exec', async (c) => {
    const id = c.req.param('id');
    const { stdin, ...rest } = parseOrThrow(execBody, await jsonBody(c), 'exec request');
    const req = stripUndefined({
      ...rest,
      stdin: stdin === undefined ? undefined : Buffer.from(stdin, 'base64'),
    });
    if (!wantsNdjson(c)) return c.json(await A(c).exec(id, req));
    return ndjson(c, (emit) => A(c).exec(id, req, (ch) => emit(chunkLine(ch))));
  });
  app.post('/v1/sandboxes/:id/execs', async (c) => {
    const body = parseOrThrow(startExecBody, await jsonBody(c), 'exec request');
    return c.json(await A(c).startExec(c.req.param('id'), stripUndefined(body)), 201);
  });
  app.get('/v1/sandboxes/:id/execs', async (c) => c.json(await A(c).listExecs(c.req.param('id'))));
  app.get('/v1/sandboxes/:id/execs/:execId', async (c) => {
    const q = parseOrThrow(pollQuery, c.req.query(), 'query');
    const o: { afterSeq?: number; waitMs?: number } = {};
    if (q.after_seq !== undefined) o.afterSeq = q.after_seq;
    if (q.wait_ms !== undefined) o.waitMs = q.wait_ms;
    return c.json(await A(c).pollExec(c.req.param('id'), c.req.param('execId'), o));
  });
  app.post('/v1/sandboxes/:id/execs/:execId/stdin', async (c) => {
    const q = parseOrThrow(stdinQuery, c.req.query(), 'query');
    await A(c).writeExecStdin(c.req.param('id'), c.req.param('execId'), await rawBody(c), q.eof ?? false);
    return c.json({ ok: true });
  });
  app.post('/v1/sandboxes/:id/execs/:execId/cancel', async (c) =>
    c.json(await A(c).cancelExec(c.req.param('id'), c.req.param('execId'))),
  );

  // ── code ──
  app.post('/v1/sandboxes/:id/code', async (c) => {
    const body = parseOrThrow(codeBody, await jsonBody(c), 'code request');
    return c.json(await A(c).runCode(c.req.param('id'), stripUndefined(body)));
  });
  app.post('/v1/sandboxes/:id/code/reset', async (c) => {
    await A(c).resetCode(c.req.param('id'));
    return c.json({ ok: true });
  });

  // ── files ──
  app.get('/v1/sandboxes/:id/files/content', async (c) => {
    const q = parseOrThrow(readQuery, c.req.query(), 'query');
    const { data, size } = await A(c).readFile(
      c.req.param('id'),
      q.path,
      stripUndefined({ offset: q.offset, length: q.length }),
    );
    // A Buffer may view a pooled or shared ArrayBuffer; hand Hono exactly the file's bytes.
    const bytes = new Uint8Array(data.buffer as ArrayBuffer, data.byteOffset, data.byteLength);
    return c.body(bytes, 200, {
      'Content-Type': 'application/octet-stream',
      [FILE_SIZE_HEADER]: String(size),
    });
  });
  app.put('/v1/sandboxes/:id/files/content', async (c) => {
    const q = parseOrThrow(writeQuery, c.req.query(), 'query');
    const data = await rawBody(c);
    return c.json(
      await A(c).writeFile(
        c.req.param('id'),
        q.path,
        data,
        stripUndefined({ mode: q.mode, createDirs: q.create_dirs }),
      ),
    );
  });
  app.get('/v1/sandboxes/:id/files/list', async (c) => {
    const q = parseOrThrow(listQuery, c.req.query(), 'query');
    return c.json(
      await A(c).listFiles(c.req.param('id'), q.path, stripUndefined({ recursive: q.recursive })),
    );
  });
  app.get('/v1/sandboxes/:id/files/stat', async (c) => {
    const q = parseOrThrow(statQuery, c.req.query(), 'query');
    return c.json(await A(c).statFile(c.req.param('id'), q.path));
  });
  app.delete('/v1/sandboxes/:id/files', async (c) => {
    const q = parseOrThrow(deleteQuery, c.req.query(), 'query');
    await A(c).deleteFile(c.req.param('id'), q.path, stripUndefined({ recursive: q.recursive }));
    return c.json({ ok: true });
  });
  app.post('/v1/sandboxes/:id/files/mkdir', async (c) => {
    const body = parseOrThrow(mkdirBody, await jsonBody(c), 'mkdir request');
    await A(c).mkdir(c.req.param('id'), body.path);
    return c.json({ ok: true });
  });
  app.post('/v1/sandboxes/:id/files/move', async (c) => {
    const body = parseOrThrow(moveBody, await jsonBody(c), 'move request');
    await A(c).moveFile(c.req.param('id'), body.from, body.to, stripUndefined({ overwrite: body.overwrite }));
    return c.json({ ok: true });
  });

  // ── images ──
  app.get('/v1/images', async (c) => c.json(await A(c).listImages()));
  app.post('/v1/images/build', async (c) => {
    const body = stripUndefined(parseOrThrow(buildImageBody, await jsonBody(c), 'image build request'));
    if (!wantsNdjson(c)) return c.json(await A(c).buildImage(body), 201);
    return ndjson(c, (emit) =>
      A(c).buildImage(body, (event: ProgressEvent) => emit({ type: 'progress', event })),
    );
  });
  app.post('/v1/images/import', async (c) => {
    const body = parseOrThrow(importImageBody, await jsonBody(c), 'image import request');
    if (!wantsNdjson(c)) return c.json(await A(c).importImage(body.name, body.source), 201);
    return ndjson(c, (emit) =>
      A(c).importImage(body.name, body.source, (event: ProgressEvent) => emit({ type: 'progress', event })),
    );
  });
  app.delete('/v1/images/:name', async (c) => {
    await A(c).removeImage(c.req.param('name'));
    return c.json({ ok: true });
  });

  // ── maintenance ──
  app.post('/v1/gc', async (c) => c.json(await A(c).gc()));
  app.get('/v1/df', async (c) => c.json(await A(c).df()));

  return app;
}

/** zod leaves absent optional keys as `undefined`; the API types (exactOptionalPropertyTypes) want them absent. */
type StripUndefined<T> = { [K in keyof T as undefined extends T[K] ? never : K]: T[K] } & {
  [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined>;
};
function stripUndefined<T extends object>(o: T): StripUndefined<T> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out as StripUndefined<T>;
}
