/**
 * A small in-memory ForkboxApi for testing transports and the CLI (not the engine): sandboxes in a map,
 * files in a map, exec echoes its argv with scripted behaviour, image builds emit progress.
 */
import { errors, ForkboxError } from '../../src/domain/errors.ts';
import type { ExecRecord, ImageRecord } from '../../src/domain/types.ts';
import type { ExecOutcome, ForkboxApi, SandboxInfo, TemplateInfo } from '../../src/service/api.ts';
import type { FileStat } from '../../src/service/ports.ts';

export interface FakeApi extends ForkboxApi {
  calls: { method: string; args: unknown[] }[];
  files: Map<string, { data: Buffer; mode: number }>;
}

export function createFakeApi(): FakeApi {
  const sandboxes = new Map<string, SandboxInfo>();
  const files = new Map<string, { data: Buffer; mode: number }>();
  const images: ImageRecord[] = [];
  const templates = new Map<string, TemplateInfo>();
  const calls: { method: string; args: unknown[] }[] = [];
  let n = 0;
  const log = (method: string, ...args: unknown[]) => calls.push({ method, args });

  const find = (id: string): SandboxInfo => {
    const s = sandboxes.get(id) ?? [...sandboxes.values()].find((x) => x.name === id);
    if (!s) throw errors.sandboxNotFound(id);
    return s;
  };
  const key = (id: string, path: string) => `${find(id).id}:${path}`;
  const execRecord = (sandboxId: string, command: string[]): ExecRecord => ({
    id: `ex-${++n}`,
    sandboxId,
    idempotencyKey: null,
    command,
    state: 'exited',
    exitCode: 0,
    signal: null,
    timedOut: false,
    truncated: false,
    oomKilled: false,
    leftovers: 0,
    tree: null,
    streams: null,
    startedAt: 1,
    endedAt: 2,
  });

  return {
    calls,
    files,
    async status() {
      return {
        version: '0.0.0-test',
        runtime: 'fake',
        capabilities: {
          forkProcessState: false,
          pause: true,
          limits: { memory: true, pids: true, cpu: true, disk: true },
          network: false,
        },
        stateDir: '/fake',
        sandboxes: { running: sandboxes.size },
        templates: 0,
      };
    },
    async createSandbox(req) {
      log('createSandbox', req);
      if (req.image === 'missing') throw errors.imageNotFound('missing');
      const id = `sb-${++n}`;
      const info: SandboxInfo = {
        id,
        name: req.name ?? id,
        state: 'running',
        image: req.image ?? 'debian',
        parentId: null,
        depth: 0,
        limits: {
          memoryBytes: (req.memoryMb ?? 1024) * 1024 * 1024,
          pids: req.pids ?? 512,
          cpus: req.cpus ?? 1,
          diskBytes: (req.diskMb ?? 10240) * 1024 * 1024,
          diskInodes: req.diskInodes ?? 1_000_000,
        },
        labels: req.labels ?? {},
        persistent: req.persistent === true,
        children: [],
        createdAt: new Date(0).toISOString(),
        expiresAt: null,
        endReason: null,
      };
      sandboxes.set(id, info);
      return info;
    },
    async listSandboxes(opts = {}) {
      log('listSandboxes', opts);
      return [...sandboxes.values()].filter((s) => opts.all || s.state !== 'killed');
    },
    async getSandbox(id, opts = {}) {
      const s = find(id);
      return opts.usage
        ? {
            ...s,
            usage: { memoryBytes: 1, cpuUsageNs: 2, pids: 3, diskBytes: 4, diskInodes: 5, oomKills: 0 },
          }
        : s;
    },
    async createSnapshot() {
      throw new ForkboxError('unavailable', 'the fake api has no snapshots');
    },
    async listSnapshots() {
      return [];
    },
    async getSnapshot(id) {
      throw new ForkboxError('not_found', `no snapshot '${id}'`);
    },
    async deleteSnapshot(id) {
      throw new ForkboxError('not_found', `no snapshot '${id}'`);
    },
    async restoreSnapshot(id) {
      throw new ForkboxError('not_found', `no snapshot '${id}'`);
    },
    async mergeSandbox(parent) {
      throw new ForkboxError('unavailable', `the fake api does not merge (${parent})`);
    },
    async forkSandbox(id, req) {
      log('forkSandbox', id, req);
      throw new ForkboxError('unavailable', 'the fake api does not fork');
    },
    async diffSandboxes(a, b, opts) {
      log('diffSandboxes', a, b, opts);
      const file = (size: number, sha256: string) => ({ type: 'file' as const, size, mode: 0o644, sha256 });
      return {
        a: find(a).id,
        b: find(b).id,
        base: 's-fake',
        added: [
          { path: '/work/new', b: { type: 'symlink' as const, size: 3, mode: 0o777, linkTarget: '/x' } },
        ],
        removed: [{ path: '/work/old', a: { type: 'dir' as const, size: 0, mode: 0o755 } }],
        modified: [{ path: '/work/f', a: file(4, 'aa'), b: file(4, 'bb'), changes: ['content'] }],
        truncated: false,
        ...(opts?.unifiedFor === undefined ? {} : { unified: `--- a${opts.unifiedFor}\n` }),
      };
    },
    async killSandbox(id) {
      log('killSandbox', id);
      const s = find(id);
      s.state = 'killed';
      return s;
    },
    async pauseSandbox(id) {
      const s = find(id);
      if (s.state !== 'running') throw errors.sandboxNotRunning(s.id, s.state);
      s.state = 'paused';
      return s;
    },
    async resumeSandbox(id) {
      const s = find(id);
      s.state = 'running';
      return s;
    },
    async extendSandbox(id, ttl) {
      const s = find(id);
      s.expiresAt = new Date(ttl * 1000).toISOString();
      return s;
    },
    async exec(id, req, opts) {
      const onOutput = opts?.onOutput;
      log('exec', id, req);
      const s = find(id);
      const argv = req.argv ?? ['sh', '-c', req.cmd ?? ''];
      const outcome: ExecOutcome = {
        execId: `ex-${++n}`,
        exitCode: 0,
        signal: null,
        stdout: '',
        stderr: '',
        truncated: false,
        timedOut: false,
        oomKilled: false,
        cancelled: false,
        durationMs: 1,
        leftovers: 0,
      };
      if (argv[0] === 'fail') throw new ForkboxError('busy', 'sandbox is busy; retry later');
      if (argv[0] === 'die') {
        onOutput?.({ seq: 0, stream: 'stdout', data: Buffer.from('partial\n') });
        throw new ForkboxError('sandbox_gone', `sandbox ${s.id} ended while the command ran`);
      }
      if (argv[0] === 'killed') return { ...outcome, exitCode: null, signal: 9, timedOut: true };
      const out = Buffer.from(`${argv.join(' ')}\n`);
      const err = Buffer.from(req.stdin ? req.stdin : 'no-stdin');
      onOutput?.({ seq: 0, stream: 'stdout', data: out });
      onOutput?.({ seq: 1, stream: 'stderr', data: err });
      return {
        ...outcome,
        exitCode: argv[0] === 'exit3' ? 3 : 0,
        stdout: out.toString(),
        stderr: err.toString(),
      };
    },
    async startExec(id, req) {
      log('startExec', id, req);
      return execRecord(find(id).id, req.argv ?? [req.cmd ?? '']);
    },
    async pollExec(id, execId, opts = {}) {
      log('pollExec', id, execId, opts);
      return {
        exec: { ...execRecord(find(id).id, ['x']), id: execId },
        chunks: [{ seq: (opts.afterSeq ?? -1) + 1, stream: 'stdout', data: 'hi' }],
        nextSeq: (opts.afterSeq ?? -1) + 2,
        done: true,
        missed: [],
      };
    },
    async writeExecStdin(id, execId, data, eof) {
      log('writeExecStdin', id, execId, data, eof);
    },
    async cancelExec(id, execId) {
      return { ...execRecord(find(id).id, ['x']), id: execId, state: 'cancelled' };
    },
    async listExecs(id) {
      return [execRecord(find(id).id, ['ls'])];
    },
    async runCode(id, req) {
      log('runCode', id, req);
      find(id);
      const failed = req.code.includes('raise');
      return {
        ok: !failed,
        value: failed ? null : '42',
        stdout: 'out\n',
        stderr: '',
        error: failed
          ? { type: 'ValueError', message: 'boom', traceback: 'Traceback...\nValueError: boom\n' }
          : null,
        timedOut: false,
        interrupted: false,
        restarted: false,
        truncated: false,
        oomKilled: false,
        images: [],
        durationMs: 1,
      };
    },
    async resetCode(id) {
      log('resetCode', id);
      find(id);
    },
    async readFile(id, path, opts = {}) {
      const f = files.get(key(id, path));
      if (!f) throw new ForkboxError('not_found', `no file ${path} in sandbox ${id}`, { path });
      const start = opts.offset ?? 0;
      const end = opts.length === undefined ? f.data.length : start + opts.length;
      return { data: f.data.subarray(start, end), size: f.data.length };
    },
    async writeFile(id, path, data, opts = {}) {
      log('writeFile', id, path, opts);
      files.set(key(id, path), { data: Buffer.from(data), mode: opts.mode ?? 0o644 });
      return { size: data.length };
    },
    async listFiles(id, path, opts = {}) {
      log('listFiles', id, path, opts);
      const prefix = `${find(id).id}:${path.endsWith('/') ? path : `${path}/`}`;
      const entries = [...files.entries()]
        .filter(([k]) => k.startsWith(prefix))
        .map(([k, f]) => {
          const p = k.slice(k.indexOf(':') + 1);
          return {
            path: p,
            name: p.split('/').pop() ?? '',
            type: 'file' as const,
            size: f.data.length,
            mode: f.mode,
            mtimeMs: 0,
          };
        });
      return { entries, truncated: false };
    },
    async statFile(id, path): Promise<FileStat> {
      const f = files.get(key(id, path));
      if (f) return { path, type: 'file', size: f.data.length, mode: f.mode, mtimeMs: 0 };
      const prefix = `${find(id).id}:${path.endsWith('/') ? path : `${path}/`}`;
      if (path === '/' || [...files.keys()].some((k) => k.startsWith(prefix))) {
        return { path, type: 'dir', size: 0, mode: 0o755, mtimeMs: 0 };
      }
      throw new ForkboxError('not_found', `no file ${path} in sandbox ${id}`, { path });
    },
    async deleteFile(id, path, opts = {}) {
      log('deleteFile', id, path, opts);
      if (!files.delete(key(id, path))) throw new ForkboxError('not_found', `no file ${path}`);
    },
    async mkdir(id, path) {
      log('mkdir', id, path);
      find(id);
    },
    async moveFile(id, from, to, opts = {}) {
      log('moveFile', id, from, to, opts);
      const f = files.get(key(id, from));
      if (!f) throw new ForkboxError('not_found', `no file ${from}`);
      files.delete(key(id, from));
      files.set(key(id, to), f);
    },
    async listImages() {
      return images;
    },
    async buildImage(req, onProgress) {
      log('buildImage', req);
      onProgress?.({ phase: 'download', message: 'fetching', current: 1, total: 2 });
      onProgress?.({ phase: 'download', message: 'fetching', current: 2, total: 2 });
      onProgress?.({ phase: 'shift', message: 'shifting uids' });
      const img: ImageRecord = {
        name: req.name ?? `debian-${req.suite ?? 'bookworm'}`,
        id: 'img1',
        layers: ['/l/1'],
        createdAt: 0,
        sizeBytes: 1000,
        source: `debootstrap:${req.suite ?? 'bookworm'}`,
        env: {},
        python: '/usr/bin/python3',
      };
      images.push(img);
      return img;
    },
    async importImage(name, source, onProgress) {
      log('importImage', name, source);
      onProgress?.({ phase: 'extract', message: source });
      if (source.includes('bad'))
        throw new ForkboxError('invalid_argument', `cannot import ${source}: not a rootfs`);
      const img: ImageRecord = {
        name,
        id: 'img2',
        layers: [],
        createdAt: 0,
        sizeBytes: 5,
        source: `import:${source}`,
        env: {},
        python: null,
      };
      images.push(img);
      return img;
    },
    async removeImage(name) {
      log('removeImage', name);
      if (!images.some((i) => i.name === name)) throw errors.imageNotFound(name);
    },
    async defineTemplate(req) {
      log('defineTemplate', req);
      const t: TemplateInfo = {
        name: req.name,
        image: req.image ?? 'debian',
        prewarm: req.prewarm ?? [],
        builtin: false,
        createdAt: '2020-01-01T00:00:00.000Z',
        updatedAt: '2020-01-01T00:00:00.000Z',
      };
      templates.set(req.name, t);
      return t;
    },
    async listTemplates() {
      const builtin: TemplateInfo = {
        name: 'default',
        image: 'debian',
        prewarm: [],
        builtin: true,
        createdAt: null,
        updatedAt: null,
      };
      return [builtin, ...templates.values()];
    },
    async deleteTemplate(name) {
      log('deleteTemplate', name);
      if (!templates.delete(name)) throw new ForkboxError('not_found', `no template '${name}'`);
      return { deleted: name };
    },
    async gc() {
      return { removedSandboxes: ['sb-old'], removedMounts: [], removedCgroups: [], removedDirs: [] };
    },
    async df() {
      return { stateDir: '/fake', images: [{ name: 'debian', bytes: 10 }], sandboxes: [], totalBytes: 10 };
    },
  };
}
