/**
 * ForkboxApi over the daemon's local API (protocol/rest/local-app.ts) on its Unix socket. Errors come back
 * as the same ForkboxError codes the engine threw; streaming calls (exec output, image progress) read NDJSON.
 */

import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Agent, type ClientRequest, request } from 'node:http';
import { ForkboxError, isForkboxError } from '../domain/errors.ts';
import type { ExecRecord, ImageRecord } from '../domain/types.ts';
import { fromErrorBody } from '../protocol/rest/errors.ts';
import { SESSION_HEADER } from '../protocol/rest/local-app.ts';
import { FILE_SIZE_HEADER, NDJSON } from '../protocol/rest/local-schemas.ts';
import type { ExecOutcome, ForkboxApi, ProgressEvent } from '../service/api.ts';
import type { ExecOutputChunk } from '../service/ports.ts';

export interface DaemonClient extends ForkboxApi {
  readonly socketPath: string;
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
  /** This client, with every request acting in the session `id`. */
  withSession(id: string): DaemonClient;
}

export interface ClientSession {
  readonly id: string;
  close(): void;
}

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

export function createDaemonClient(opts: { socketPath: string; session?: string }): DaemonClient {
  const { socketPath } = opts;
  // Keep-alive: a CLI command or the stdio MCP server makes many small calls; reconnecting each time costs.
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });

  const unavailable = (e: NodeJS.ErrnoException) =>
    new ForkboxError(
      'unavailable',
      e.code === 'ENOENT' || e.code === 'ECONNREFUSED'
        ? `the forkbox daemon is not running (nothing answers on ${socketPath}). Start it with 'sudo forkbox serve'.`
        : `lost the connection to the forkbox daemon on ${socketPath} (${e.code ?? e.message}). Check its log (daemon.log in the state dir) and retry.`,
      { socketPath, cause: e.code ?? e.message },
    );

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
      if (opts.session !== undefined) headers[SESSION_HEADER] = opts.session;
      const req = request(
        { socketPath, agent, method: r.method, path: buildPath(r.path, r.query), headers },
        (res) => {
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
        },
      );
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
    if (status < 200 || status >= 300) throw fromErrorBody(status, parsed);
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
    socketPath,
    async health(timeoutMs = 1000) {
      try {
        await call({ method: 'GET', path: '/healthz', timeoutMs });
        return true;
      } catch {
        return false;
      }
    },
    close: () => agent.destroy(),
    openSession: () => openSession(socketPath),
    withSession: (id) => createDaemonClient({ socketPath, session: id }),

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

    exec(id, req, onOutput) {
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

    runCode: (id, req) => call({ method: 'POST', path: sb(id, '/code'), json: req }),
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
        throw fromErrorBody(status, parsed);
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

/**
 * Hold `POST /v1/sessions/<id>/attach` open for the life of the session. The first attach must
 * succeed; after that, a dropped connection (daemon restart) is re-attached with backoff, within the
 * daemon's re-attach window, so the session's sandboxes survive the restart.
 */
function openSession(socketPath: string): Promise<ClientSession> {
  const id = randomBytes(16).toString('hex');
  let closed = false;
  let current: ClientRequest | null = null;
  const attach = (onFirst?: (e: Error | null) => void): void => {
    let firstDone = false;
    const first = (e: Error | null) => {
      if (!firstDone) {
        firstDone = true;
        onFirst?.(e);
      }
    };
    const retry = (delay: number) => {
      if (closed) return;
      const t = setTimeout(() => attach(), delay);
      t.unref();
    };
    const req = request(
      { socketPath, method: 'POST', path: `/v1/sessions/${id}/attach`, agent: false },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          first(new ForkboxError('unavailable', `the daemon refused the session (HTTP ${res.statusCode}).`));
          return;
        }
        res.once('data', () => {
          // Attached: from now on the session must not keep a CLI process alive on its own.
          res.socket.unref();
          first(null);
        });
        res.on('data', () => undefined);
        res.on('close', () => {
          if (!firstDone) first(new ForkboxError('unavailable', 'the daemon closed the session at once.'));
          else retry(250);
        });
      },
    );
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (!firstDone) {
        first(
          new ForkboxError(
            'unavailable',
            `cannot open a session with the forkbox daemon on ${socketPath}: ${e.code ?? e.message}`,
          ),
        );
      } else retry(500);
    });
    req.end();
    current = req;
  };
  return new Promise((resolve, reject) => {
    attach((e) => {
      if (e) {
        closed = true;
        reject(e);
        return;
      }
      resolve({
        id,
        close() {
          closed = true;
          current?.destroy();
        },
      });
    });
  });
}
