/**
 * One request to the daemon's /v1 API over an endpoint transport (daemon-endpoint.ts): JSON or raw body
 * out; JSON, bytes or NDJSON lines back; the daemon's error bodies turned back into ForkboxErrors. Every
 * request can be aborted by an AbortSignal: the connection is destroyed, which is what tells the daemon
 * the caller is gone (an aborted exec request cancels the exec there).
 */
import type { IncomingMessage } from 'node:http';
import { ForkboxError, isForkboxError } from '../domain/errors.ts';
import { fromErrorBody } from '../protocol/rest/errors.ts';
import { CLIENT_HEADER, NDJSON, SESSION_HEADER } from '../protocol/rest/wire.ts';
import type { EndpointTransport } from './daemon-endpoint.ts';

/** Largest response body buffered in memory (file reads come in pages far below this). */
export const MAX_RESPONSE_BYTES = 256 * 1024 * 1024;
/** Longest NDJSON line (exec output arrives in small base64 chunks; results are bounded by the daemon). */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

export type Query = Record<string, string | number | boolean | string[] | undefined>;

export interface Req {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  query?: Query;
  json?: unknown;
  raw?: Buffer;
  /** Extra request headers (If-Match). */
  headers?: Record<string, string>;
  ndjson?: (line: Record<string, unknown>) => void;
  timeoutMs?: number;
  /** Abort this request (besides the scope's signal). */
  signal?: AbortSignal | undefined;
}

export interface RequestScope {
  /** Act in this client session (x-forkbox-session). */
  session?: string | undefined;
  /** Abort every request when this fires. */
  signal?: AbortSignal | undefined;
  /** This client's name for itself in the daemon's audit log (x-forkbox-client): `cli`, `mcp-stdio`. */
  client?: string | undefined;
}

export interface Requester {
  /** The raw response (status, headers, body) of a request. */
  send(r: Req): Promise<{ res: IncomingMessage; body: Buffer }>;
  /** A JSON call: the parsed body on 2xx, the daemon's error otherwise. */
  call<T>(r: Req): Promise<T>;
  /** A streaming call: each non-terminal line to `onLine`; returns the `result` line, throws the `error` line. */
  streamCall<T>(r: Omit<Req, 'ndjson'>, onLine: (line: Record<string, unknown>) => void): Promise<T>;
  /** The error for an HTTP error status and its (parsed) body. */
  httpError(status: number, body: unknown): ForkboxError;
}

export function buildPath(path: string, query: Query | undefined): string {
  if (!query) return path;
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const item of v) qs.append(k, item);
    else qs.append(k, typeof v === 'boolean' ? (v ? '1' : '0') : String(v));
  }
  const s = qs.toString();
  return s === '' ? path : `${path}?${s}`;
}

const tooLarge = (what: string, limit: number) =>
  new ForkboxError(
    'too_large',
    `the forkbox daemon sent ${what} over ${limit} bytes; ask for less (a page of a file, a narrower listing).`,
  );

/**
 * Collects a response: the whole body, or NDJSON lines fed to `onLine` as they arrive. `fail` ends the
 * call with an error (a malformed line, a throwing callback, a size limit).
 */
function collect(
  res: IncomingMessage,
  onLine: ((line: Record<string, unknown>) => void) | undefined,
  fail: (e: unknown) => void,
  done: (body: Buffer) => void,
): void {
  const parts: Buffer[] = [];
  let size = 0;
  // The line being received, as bytes: a line may span chunks (and a UTF-8 character may too), and only
  // each new chunk is searched for its end, so a long line costs its length, not its length squared.
  let line: Buffer[] = [];
  let lineSize = 0;
  let failed = false;
  const stop = (e: unknown) => {
    failed = true;
    res.destroy();
    fail(e);
  };
  const feed = (bytes: Buffer): void => {
    const text = bytes.toString('utf8');
    if (failed || text.trim() === '') return;
    try {
      onLine?.(JSON.parse(text) as Record<string, unknown>);
    } catch (e) {
      stop(
        isForkboxError(e)
          ? e
          : new ForkboxError(
              'internal',
              `bad streamed line from the forkbox daemon: ${(e as Error).message}`,
            ),
      );
    }
  };
  res.on('data', (d: Buffer) => {
    if (failed) return;
    if (!onLine) {
      size += d.length;
      if (size > MAX_RESPONSE_BYTES) return stop(tooLarge('a response', MAX_RESPONSE_BYTES));
      parts.push(d);
      return;
    }
    let start = 0;
    for (let nl = d.indexOf(0x0a); nl >= 0 && !failed; nl = d.indexOf(0x0a, start)) {
      line.push(d.subarray(start, nl));
      feed(line.length === 1 ? (line[0] as Buffer) : Buffer.concat(line));
      line = [];
      lineSize = 0;
      start = nl + 1;
    }
    if (failed || start >= d.length) return;
    line.push(d.subarray(start));
    lineSize += d.length - start;
    if (lineSize > MAX_LINE_BYTES) stop(tooLarge('a streamed line', MAX_LINE_BYTES));
  });
  res.on('end', () => {
    if (onLine && line.length > 0) feed(Buffer.concat(line));
    if (!failed) done(Buffer.concat(parts));
  });
}

export function createRequester(transport: EndpointTransport, scope: RequestScope = {}): Requester {
  const { unavailable } = transport;
  const { session, client } = scope;
  const signalOf = (r: Req): AbortSignal | undefined =>
    r.signal && scope.signal ? AbortSignal.any([r.signal, scope.signal]) : (r.signal ?? scope.signal);
  const httpError = (status: number, body: unknown) => transport.refine(fromErrorBody(status, body), status);

  function send(r: Req): Promise<{ res: IncomingMessage; body: Buffer }> {
    const signal = signalOf(r);
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const headers: Record<string, string> = { ...r.headers };
      let payload: Buffer | undefined;
      if (r.json !== undefined) {
        payload = Buffer.from(JSON.stringify(r.json));
        headers['content-type'] = 'application/json';
      } else if (r.raw !== undefined) {
        payload = r.raw;
        headers['content-type'] = 'application/octet-stream';
      }
      if (payload) headers['content-length'] = String(payload.length);
      if (r.ndjson) headers.accept = NDJSON;
      if (session !== undefined) headers[SESSION_HEADER] = session;
      if (client !== undefined) headers[CLIENT_HEADER] = client;
      const req = transport.request(r.method, buildPath(r.path, r.query), headers, (res) => {
        const isStream =
          r.ndjson !== undefined &&
          res.statusCode === 200 &&
          (res.headers['content-type'] ?? '').includes(NDJSON);
        collect(res, isStream ? r.ndjson : undefined, reject, (body) => resolve({ res, body }));
        res.on('error', (e) => reject(signal?.aborted ? signal.reason : unavailable(e)));
      });
      // Destroying the request closes its connection: the daemon sees the caller leave.
      const onAbort = () => req.destroy();
      signal?.addEventListener('abort', onAbort, { once: true });
      req.once('close', () => signal?.removeEventListener('abort', onAbort));
      if (r.timeoutMs !== undefined) {
        req.setTimeout(r.timeoutMs, () =>
          req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })),
        );
      }
      req.on('error', (e: NodeJS.ErrnoException) => {
        if (signal?.aborted) reject(signal.reason);
        else reject(isForkboxError(e) ? e : unavailable(e));
      });
      req.end(payload);
    });
  }

  async function call<T>(r: Req): Promise<T> {
    const { res, body } = await send(r);
    const status = res.statusCode ?? 0;
    let parsed: unknown;
    try {
      parsed = body.length > 0 ? JSON.parse(body.toString('utf8')) : undefined;
    } catch {
      parsed = undefined;
    }
    if (status < 200 || status >= 300) throw httpError(status, parsed);
    return parsed as T;
  }

  async function streamCall<T>(
    r: Omit<Req, 'ndjson'>,
    onLine: (line: Record<string, unknown>) => void,
  ): Promise<T> {
    let final: { result: T } | undefined;
    let failure: ForkboxError | undefined;
    const out = await call<T | undefined>({
      ...r,
      ndjson: (line) => {
        if (line.type === 'result') final = { result: line.result as T };
        else if (line.type === 'error') failure = fromErrorBody(500, line);
        else onLine(line);
      },
    });
    if (failure) throw failure;
    if (final) return final.result;
    if (out !== undefined) return out; // the server answered with plain JSON
    throw new ForkboxError(
      'unavailable',
      'the forkbox daemon closed the stream before sending a result (did it restart?). Check daemon.log and retry.',
    );
  }

  return { send, call, streamCall, httpError };
}
