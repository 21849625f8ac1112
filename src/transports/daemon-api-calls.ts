/**
 * ForkboxApi's methods as /v1 requests, grouped by concern (sandboxes, execution, files, catalog). Each
 * group maps arguments to a route and nothing else: the transport, errors and streaming live in
 * daemon-request.ts.
 */

import type { BrowserResult } from '../domain/browser.ts';
import { ForkboxError } from '../domain/errors.ts';
import type { ExecRecord, ImageRecord } from '../domain/types.ts';
import {
  FILE_END_HEADER,
  FILE_EXTENTS_HEADER,
  FILE_SIZE_HEADER,
  parseExtents,
  quoteEtag,
  unquoteEtag,
} from '../protocol/rest/wire.ts';
import type {
  ExecApi,
  ExecOutcome,
  ForkboxApi,
  PortInfo,
  ProgressEvent,
  SandboxApi,
  SandboxInfo,
} from '../service/api.ts';
import type { ExecOutputChunk, FileRead, ReplResult } from '../service/ports.ts';
import type { Requester } from './daemon-request.ts';

const seg = (s: string) => encodeURIComponent(s);
const sb = (id: string, rest = '') => `/v1/sandboxes/${seg(id)}${rest}`;

type Calls<K extends keyof ForkboxApi> = Pick<ForkboxApi, K>;

/** Lifecycle, forks, snapshots, diff. */
export function sandboxCalls(rq: Requester): SandboxApi {
  const { call, streamCall } = rq;
  return {
    status: () => call({ method: 'GET', path: '/v1/system' }),
    createSandbox: (req, opts) => {
      const onProgress = opts?.onProgress;
      if (!onProgress) return call({ method: 'POST', path: '/v1/sandboxes', json: req });
      return streamCall<SandboxInfo>({ method: 'POST', path: '/v1/sandboxes', json: req }, (line) => {
        if (line.type === 'progress') onProgress(line.event as ProgressEvent);
      });
    },
    listSandboxes: (o = {}) =>
      call({
        method: 'GET',
        path: '/v1/sandboxes',
        query: {
          all: o.all,
          namespace: o.namespace,
          label: o.labels ? Object.entries(o.labels).map(([k, v]) => `${k}=${v}`) : undefined,
        },
      }),
    getSandbox: (id, o = {}) => call({ method: 'GET', path: sb(id), query: { usage: o.usage } }),
    killSandbox: (id, o = {}) =>
      call({ method: 'DELETE', path: sb(id), query: { cascade: o.cascade, namespace: o.namespace } }),
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
    applyProject: (id) => call({ method: 'POST', path: sb(id, '/project/apply') }),
    exposePort: (id, port, o = {}) => call({ method: 'POST', path: sb(id, '/ports'), json: { port, ...o } }),
    listPorts: async (id) =>
      ((await call({ method: 'GET', path: sb(id, '/ports') })) as { ports: PortInfo[] }).ports,
    connectPort: async () => {
      throw new ForkboxError(
        'invalid_argument',
        "a published port is reached on its host address (forkbox port ID PORT), not through the daemon's socket.",
      );
    },
    pauseSandbox: (id) => call({ method: 'POST', path: sb(id, '/pause') }),
    resumeSandbox: (id) => call({ method: 'POST', path: sb(id, '/resume') }),
    extendSandbox: (id, ttlSeconds) =>
      call({ method: 'POST', path: sb(id, '/extend'), json: { ttlSeconds } }),
  };
}

/** An NDJSON `output` line handler: the chunk to onOutput, other lines ignored. */
function outputLines(onOutput: (c: ExecOutputChunk) => void) {
  return (line: Record<string, unknown>): void => {
    if (line.type !== 'output') return;
    onOutput({
      seq: line.seq as number,
      stream: line.stream === 'stderr' ? 'stderr' : 'stdout',
      data: Buffer.from(String(line.data), 'base64'),
    });
  };
}

/** Commands (sync and background) and the REPL. */
export function execCalls(rq: Requester): ExecApi {
  const { call, streamCall } = rq;
  const cancelExec = (id: string, execId: string): Promise<ExecRecord> =>
    call({ method: 'POST', path: sb(id, `/execs/${seg(execId)}/cancel`) });
  return {
    exec(id, req, opts) {
      const { stdin, ...rest } = req;
      const json = stdin === undefined ? rest : { ...rest, stdin: stdin.toString('base64') };
      const r = { method: 'POST' as const, path: sb(id, '/exec'), json };
      if (!opts?.onOutput && !opts?.onPeek && !opts?.onStarted && !opts?.signal) return call<ExecOutcome>(r);
      // Streamed: the first line names the exec, so this call's signal cancels it by id and its result
      // still comes (cancelled: true), as in-process. (A scope's signal, withSignal, closes the
      // connection instead; the daemon cancels on that too.)
      let execId: string | undefined;
      const signal = opts.signal;
      const cancel = () => {
        if (execId !== undefined) cancelExec(id, execId).catch(() => undefined);
      };
      signal?.addEventListener('abort', cancel, { once: true });
      return streamCall<ExecOutcome>(r, (line) => {
        if (line.type === 'started' && typeof line.execId === 'string') {
          execId = line.execId;
          opts.onStarted?.(execId);
          if (signal?.aborted) cancel();
        } else if (line.type === 'output') {
          const chunk: ExecOutputChunk = {
            seq: line.seq as number,
            stream: line.stream === 'stderr' ? 'stderr' : 'stdout',
            data: Buffer.from(String(line.data), 'base64'),
          };
          if (typeof line.offset === 'number') chunk.offset = line.offset;
          opts.onOutput?.(chunk);
        } else if (line.type === 'peek') {
          opts.onPeek?.({
            stream: line.stream === 'stderr' ? 'stderr' : 'stdout',
            data: Buffer.from(String(line.data), 'base64'),
            totalBytes: typeof line.totalBytes === 'number' ? line.totalBytes : 0,
          });
        }
      }).finally(() => signal?.removeEventListener('abort', cancel));
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
    async resizeExec(id, execId, size) {
      await call({ method: 'POST', path: sb(id, `/execs/${seg(execId)}/resize`), json: size });
    },
    cancelExec,
    listExecs: (id) => call({ method: 'GET', path: sb(id, '/execs') }),
    runCode(id, req, opts) {
      // With onOutput the daemon streams the code's output as NDJSON lines before the result.
      const r = { method: 'POST' as const, path: sb(id, '/code'), json: req, signal: opts?.signal };
      const onOutput = opts?.onOutput;
      if (!onOutput) return call<ReplResult>(r);
      return streamCall<ReplResult>(r, outputLines(onOutput));
    },
    async resetCode(id) {
      await call({ method: 'POST', path: sb(id, '/code/reset') });
    },
  };
}

/** The sandbox's browser. */
export function browserCalls(rq: Requester): Calls<'browser'> {
  return {
    // No timeout of its own: a cold Chromium start plus a page's load is bounded by the daemon.
    browser: (id, action) =>
      rq.call<BrowserResult>({ method: 'POST', path: sb(id, '/browser'), json: action }),
  };
}

/** The sandbox's files. */
export function fileCalls(
  rq: Requester,
): Calls<'readFile' | 'writeFile' | 'listFiles' | 'statFile' | 'deleteFile' | 'mkdir' | 'moveFile'> {
  const { call, send, httpError } = rq;
  return {
    async readFile(id, path, o = {}) {
      const { res, body } = await send({
        method: 'GET',
        path: sb(id, '/files/content'),
        query: { path, offset: o.offset, length: o.length, sparse: o.sparse },
      });
      const status = res.statusCode ?? 0;
      if (status !== 200) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(body.toString('utf8'));
        } catch {}
        throw httpError(status, parsed);
      }
      const header = (name: string): string => {
        const v = res.headers[name];
        return typeof v === 'string' ? v : '';
      };
      const r: FileRead = {
        data: body,
        size: Number(header(FILE_SIZE_HEADER) || body.length),
        etag: unquoteEtag(header('etag')),
      };
      if (o.sparse === true) {
        r.extents = parseExtents(header(FILE_EXTENTS_HEADER));
        r.end = Number(header(FILE_END_HEADER));
      }
      return r;
    },
    writeFile: (id, path, data, o = {}) =>
      call({
        method: 'PUT',
        path: sb(id, '/files/content'),
        query: {
          path,
          mode: o.mode === undefined ? undefined : o.mode.toString(8),
          create_dirs: o.createDirs,
          append: o.append,
          offset: o.offset,
        },
        ...(o.ifMatch === undefined ? {} : { headers: { 'if-match': quoteEtag(o.ifMatch) } }),
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
  };
}

/** Images, templates and host housekeeping. */
export function catalogCalls(
  rq: Requester,
): Calls<
  | 'listImages'
  | 'buildImage'
  | 'importImage'
  | 'pullImage'
  | 'removeImage'
  | 'defineTemplate'
  | 'listTemplates'
  | 'deleteTemplate'
  | 'gc'
  | 'df'
> {
  const { call, streamCall } = rq;
  const progress = (onProgress?: (e: ProgressEvent) => void) => (line: Record<string, unknown>) => {
    if (line.type === 'progress' && onProgress) onProgress(line.event as ProgressEvent);
  };
  return {
    listImages: () => call({ method: 'GET', path: '/v1/images' }),
    buildImage: (req, onProgress) =>
      streamCall<ImageRecord>({ method: 'POST', path: '/v1/images/build', json: req }, progress(onProgress)),
    importImage: (name, source, onProgress) =>
      streamCall<ImageRecord>(
        { method: 'POST', path: '/v1/images/import', json: { name, source } },
        progress(onProgress),
      ),
    pullImage: (ref, onProgress) =>
      streamCall<ImageRecord>(
        { method: 'POST', path: '/v1/images/pull', json: { ref } },
        progress(onProgress),
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
}
