/**
 * ForkboxApi over the daemon's /v1 API: the local API (protocol/rest/local-app.ts) on its Unix socket,
 * or the same routes on the TCP listener of `forkbox serve --listen` given a base URL and a bearer
 * token (daemon-endpoint.ts). Errors come back as the same ForkboxError codes the engine threw;
 * streaming calls (exec output, image progress) read NDJSON.
 */

import type { IncomingMessage } from 'node:http';
import { ForkboxError, isForkboxError } from '../domain/errors.ts';
import type { ExecRecord, ImageRecord } from '../domain/types.ts';
import { fromErrorBody } from '../protocol/rest/errors.ts';
import { SESSION_HEADER } from '../protocol/rest/local-app.ts';
import { FILE_SIZE_HEADER, NDJSON } from '../protocol/rest/local-schemas.ts';
import type { ExecOutcome, ForkboxApi, ProgressEvent } from '../service/api.ts';
import type { ExecOutputChunk, ReplResult } from '../service/ports.ts';
import { createTransport, type DaemonEndpoint, parseDaemonUrl } from './daemon-endpoint.ts';
import { type ClientSession, openSession } from './daemon-session.ts';

export interface DaemonClient extends ForkboxApi {
  /** The socket path, or the base URL for a remote daemon (for messages). */
  readonly target: string;
  readonly endpoint: DaemonEndpoint;
  /** Is the daemon answering /healthz? Never throws. */
  health(timeoutMs?: number): Promise<boolean>;
  /** Drop idle keep-alive connections. */
  close(): void;
  /**
   * Open a client session: it stays attached while this process holds it (re-attaching by itself
   * after a daemon restart). Sandboxes created through `withSession(id)` without `persistent: true`
   * are killed by the daemon shortly after the session ends (close(), process exit, crash).
   */
  openSession(): Promise<ClientSession>;
  /** This client, with every request acting in the session `id`. Sessions are socket-only. */
  withSession(id: string): DaemonClient;
}

export type { ClientSession } from './daemon-session.ts';

interface Req {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | string[] | undefined>;
  json?: unknown;
  raw?: Buffer;
  ndjson?: (line: Record<string, unknown>) => void;
  timeoutMs?: number;
}

function buildPath(path: string, query: Req['query']): string {
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

const seg = (s: string) => encodeURIComponent(s);

export type DaemonClientOptions =
  | { socketPath: string; session?: string }
  /** A remote daemon's TCP listener: `url` as for --url (http/https), `token` sent as a bearer token. */
  | { url: string | URL; token?: string | undefined };

const sessionsNeedSocket = (target: string) =>
  new ForkboxError(
    'invalid_argument',
    `client sessions are only served on the daemon's local socket, not over ${target}. Run 'forkbox mcp' on the daemon's host, or point an MCP client at ${target}/mcp.`,
  );

export function createDaemonClient(opts: DaemonClientOptions): DaemonClient {
  const endpoint: DaemonEndpoint =
    'socketPath' in opts
      ? { kind: 'socket', socketPath: opts.socketPath }
      : {
          kind: 'url',
          url: typeof opts.url === 'string' ? parseDaemonUrl(opts.url) : opts.url,
          token: opts.token,
        };
  const session = 'session' in opts ? opts.session : undefined;
  const transport = createTransport(endpoint);
  const { unavailable } = transport;
  const httpError = (status: number, body: unknown) => transport.refine(fromErrorBody(status, body), status);

  function send(r: Req): Promise<{ res: IncomingMessage; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = {};
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
      const req = transport.request(r.method, buildPath(r.path, r.query), headers, (res) => {
        const isStream =
          r.ndjson && res.statusCode === 200 && (res.headers['content-type'] ?? '').includes(NDJSON);
        const parts: Buffer[] = [];
        let pending = '';
        let failed = false;
        // One NDJSON line to the caller; a malformed line (or a throwing callback) ends the call.
        const feed = (line: string): boolean => {
          if (failed) return false;
          if (line.trim() === '') return true;
          try {
            r.ndjson?.(JSON.parse(line) as Record<string, unknown>);
            return true;
          } catch (e) {
            failed = true;
            res.destroy();
            reject(
              isForkboxError(e)
                ? e
                : new ForkboxError(
                    'internal',
                    `bad streamed line from the forkbox daemon: ${(e as Error).message}`,
                  ),
            );
            return false;
          }
        };
        res.on('data', (d: Buffer) => {
          if (!isStream || !r.ndjson) {
            parts.push(d);
            return;
          }
          pending += d.toString('utf8');
          let nl = pending.indexOf('\n');
          while (nl >= 0) {
            const line = pending.slice(0, nl);
            pending = pending.slice(nl + 1);
            if (!feed(line)) return;
            nl = pending.indexOf('\n');
          }
        });
        res.on('end', () => {
          if (isStream && !feed(pending)) return;
          resolve({ res, body: Buffer.concat(parts) });
        });
        res.on('error', (e) => reject(unavailable(e)));
      });
      if (r.timeoutMs !== undefined) {
        req.setTimeout(r.timeoutMs, () =>
          req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })),
        );
      }
      req.on('error', (e: NodeJS.ErrnoException) => reject(isForkboxError(e) ? e : unavailable(e)));
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

  /** A streaming call: feed each non-terminal line to `onLine`; return the `result` line, throw the `error` line. */
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

  const sb = (id: string, rest = '') => `/v1/sandboxes/${seg(id)}${rest}`;
  const progressHandler = (onProgress?: (e: ProgressEvent) => void) => (line: Record<string, unknown>) => {
    if (line.type === 'progress' && onProgress) onProgress(line.event as ProgressEvent);
  };

  const client: DaemonClient = {
    target: transport.target,
    endpoint,
    async health(timeoutMs = 1000) {
      try {
        await call({ method: 'GET', path: '/healthz', timeoutMs });
        return true;
      } catch {
        return false;
      }
    },
    close: () => transport.destroy(),
    openSession: () =>
      endpoint.kind === 'socket'
        ? openSession(endpoint.socketPath)
        : Promise.reject(sessionsNeedSocket(transport.target)),
    withSession(id) {
      if (endpoint.kind !== 'socket') throw sessionsNeedSocket(transport.target);
      return createDaemonClient({ socketPath: endpoint.socketPath, session: id });
    },

    status: () => call({ method: 'GET', path: '/v1/system' }),
    createSandbox: (req) => call({ method: 'POST', path: '/v1/sandboxes', json: req }),
    listSandboxes: (o = {}) =>
      call({
        method: 'GET',
        path: '/v1/sandboxes',
        query: {
          all: o.all,
          label: o.labels ? Object.entries(o.labels).map(([k, v]) => `${k}=${v}`) : undefined,
        },
      }),
    getSandbox: (id, o = {}) => call({ method: 'GET', path: sb(id), query: { usage: o.usage } }),
    killSandbox: (id, o = {}) => call({ method: 'DELETE', path: sb(id), query: { cascade: o.cascade } }),
    forkSandbox: (id, req) => call({ method: 'POST', path: sb(id, '/fork'), json: req }),
    mergeSandbox: (parent, winner) => call({ method: 'POST', path: sb(parent, '/merge'), json: { winner } }),
    createSnapshot: (id, o = {}) => call({ method: 'POST', path: sb(id, '/snapshots'), json: o }),
    listSnapshots: () => call({ method: 'GET', path: '/v1/snapshots' }),
    getSnapshot: (id) => call({ method: 'GET', path: `/v1/snapshots/${seg(id)}` }),
    deleteSnapshot: (id, o = {}) =>
      call({ method: 'DELETE', path: `/v1/snapshots/${seg(id)}`, query: { cascade: o.cascade } }),
    restoreSnapshot: (id, req = {}) =>
      call({ method: 'POST', path: `/v1/snapshots/${seg(id)}/restore`, json: req }),
    diffSandboxes: (a, b, o = {}) =>
      call({ method: 'POST', path: '/v1/sandboxes/diff', json: { a, b, ...o } }),
    pauseSandbox: (id) => call({ method: 'POST', path: sb(id, '/pause') }),
    resumeSandbox: (id) => call({ method: 'POST', path: sb(id, '/resume') }),
    extendSandbox: (id, ttlSeconds) =>
      call({ method: 'POST', path: sb(id, '/extend'), json: { ttlSeconds } }),

    exec(id, req, opts) {
      const onOutput = opts?.onOutput;
      const { stdin, ...rest } = req;
      const json = stdin === undefined ? rest : { ...rest, stdin: stdin.toString('base64') };
      if (!onOutput) return call<ExecOutcome>({ method: 'POST', path: sb(id, '/exec'), json });
      return streamCall<ExecOutcome>({ method: 'POST', path: sb(id, '/exec'), json }, (line) => {
        if (line.type !== 'output') return;
        const chunk: ExecOutputChunk = {
          seq: line.seq as number,
          stream: line.stream === 'stderr' ? 'stderr' : 'stdout',
          data: Buffer.from(String(line.data), 'base64'),
        };
        onOutput(chunk);
      });
    },
    startExec: (id, req) => call<ExecRecord>({ method: 'POST', path: sb(id, '/execs'), json: req }),
    pollExec: (id, execId, o = {}) =>
      call({
        method: 'GET',
        path: sb(id, `/execs/${seg(execId)}`),
        query: { after_seq: o.afterSeq, wait_ms: o.waitMs },
      }),
    async writeExecStdin(id, execId, data, eof) {
      await call({ method: 'POST', path: sb(id, `/execs/${seg(execId)}/stdin`), query: { eof }, raw: data });
    },
    cancelExec: (id, execId) => call({ method: 'POST', path: sb(id, `/execs/${seg(execId)}/cancel`) }),
    listExecs: (id) => call({ method: 'GET', path: sb(id, '/execs') }),

    runCode(id, req, opts) {
      const onOutput = opts?.onOutput;
      if (!onOutput) return call<ReplResult>({ method: 'POST', path: sb(id, '/code'), json: req });
      return streamCall<ReplResult>({ method: 'POST', path: sb(id, '/code'), json: req }, (line) => {
        if (line.type !== 'output') return;
        onOutput({
          seq: line.seq as number,
          stream: line.stream === 'stderr' ? 'stderr' : 'stdout',
          data: Buffer.from(String(line.data), 'base64'),
        });
      });
    },
    async resetCode(id) {
      await call({ method: 'POST', path: sb(id, '/code/reset') });
    },

    async readFile(id, path, o = {}) {
      const { res, body } = await send({
        method: 'GET',
        path: sb(id, '/files/content'),
        query: { path, offset: o.offset, length: o.length },
      });
      const status = res.statusCode ?? 0;
      if (status !== 200) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(body.toString('utf8'));
        } catch {}
        throw httpError(status, parsed);
      }
      const size = Number(res.headers[FILE_SIZE_HEADER] ?? body.length);
      return { data: body, size };
    },
    writeFile: (id, path, data, o = {}) =>
      call({
        method: 'PUT',
        path: sb(id, '/files/content'),
        query: {
          path,
          mode: o.mode === undefined ? undefined : o.mode.toString(8),
          create_dirs: o.createDirs,
        },
        raw: data,
      }),
    listFiles: (id, path, o = {}) =>
      call({ method: 'GET', path: sb(id, '/files/list'), query: { path, recursive: o.recursive } }),
    statFile: (id, path) => call({ method: 'GET', path: sb(id, '/files/stat'), query: { path } }),
    async deleteFile(id, path, o = {}) {
      await call({ method: 'DELETE', path: sb(id, '/files'), query: { path, recursive: o.recursive } });
    },
    async mkdir(id, path) {
      await call({ method: 'POST', path: sb(id, '/files/mkdir'), json: { path } });
    },
    async moveFile(id, from, to, o = {}) {
      await call({ method: 'POST', path: sb(id, '/files/move'), json: { from, to, ...o } });
    },

    listImages: () => call({ method: 'GET', path: '/v1/images' }),
    buildImage: (req, onProgress) =>
      streamCall<ImageRecord>(
        { method: 'POST', path: '/v1/images/build', json: req },
        progressHandler(onProgress),
      ),
    importImage: (name, source, onProgress) =>
      streamCall<ImageRecord>(
        { method: 'POST', path: '/v1/images/import', json: { name, source } },
        progressHandler(onProgress),
      ),
    async removeImage(name) {
      await call({ method: 'DELETE', path: `/v1/images/${seg(name)}` });
    },

    defineTemplate: (req) => call({ method: 'POST', path: '/v1/templates', json: req }),
    listTemplates: () => call({ method: 'GET', path: '/v1/templates' }),
    deleteTemplate: (name) => call({ method: 'DELETE', path: `/v1/templates/${seg(name)}` }),

    gc: () => call({ method: 'POST', path: '/v1/gc' }),
    df: () => call({ method: 'GET', path: '/v1/df' }),
  };
  return client;
}
