/**
 * What the /v1 handlers share: reading JSON and raw bodies, NDJSON streaming of progress and output, and
 * the path parameters. Each area's handlers (sandbox-handlers.ts, exec-handlers.ts, file-handlers.ts,
 * admin-handlers.ts) build on these.
 */
import type { Context, Handler } from 'hono';
import { stream } from 'hono/streaming';
import { ForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi } from '../../service/api.ts';
import type { ExecOutputChunk, ExecPeek } from '../../service/ports.ts';
import { toHttpError } from './errors.ts';
import { NDJSON } from './local-schemas.ts';
import type { RouteName } from './route-defs.ts';

export async function jsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new ForkboxError('invalid_argument', 'request body is not valid JSON. Send a JSON object.');
  }
}

export async function rawBody(c: Context): Promise<Buffer> {
  return Buffer.from(await c.req.arrayBuffer());
}

export function wantsNdjson(c: Context): boolean {
  return (c.req.header('accept') ?? '').includes(NDJSON);
}

/** Stream `run`'s events as NDJSON lines, then one `result` (or `error`) line. */
export function ndjson<T>(c: Context, run: (emit: (line: object) => void) => Promise<T>): Response {
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

export const chunkLine = (ch: ExecOutputChunk) => ({
  type: 'output',
  seq: ch.seq,
  stream: ch.stream,
  data: ch.data.toString('base64'),
  ...(ch.offset === undefined ? {} : { offset: ch.offset }),
});
export const peekLine = (p: ExecPeek) => ({
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

export type ApiFor = (c: Context) => ForkboxApi;

/** One area's handlers: a part of the route table, merged with the others in api-routes.ts. */
export type Handlers = Partial<Record<RouteName, Handler>>;

/** The `:id` (a sandbox, snapshot or its name) and `:execId` path parameters. */
export const idParam = (c: Context) => c.req.param('id') as string;
export const execIdParam = (c: Context) => c.req.param('execId') as string;
