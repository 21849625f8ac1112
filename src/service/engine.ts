/**
 * The engine: implements ForkboxApi over a Runtime, a Store and an image catalog. Owns sandbox
 * lifecycles (every transition through the store's state machine), TTL reaping and exec bookkeeping.
 */
import { randomBytes } from 'node:crypto';
import { errors, ForkboxError } from '../domain/errors.ts';
import type { Logger } from '../domain/logger.ts';
import { isLive } from '../domain/sandbox-state.ts';
import type { ImageRecord, SandboxRecord } from '../domain/types.ts';
import type {
  CodeRunRequest,
  CreateSandboxRequest,
  DiskUsage,
  ForkboxApi,
  GcReport,
  ProgressEvent,
  SandboxInfo,
  SystemStatus,
} from './api.ts';
import { diffSandboxRecords } from './diff.ts';
import type { DiskPolicy } from './disk-limits.ts';
import { createExecManager } from './exec-manager.ts';
import { createLineage } from './lineage.ts';
import type { ReplResult, Runtime, Store } from './ports.ts';
import { info } from './sandbox-info.ts';
import { createSnapshots, SNAPSHOT_LABEL } from './snapshots.ts';
import { createTemplateConfigs } from './template-configs.ts';
import { checkEnv, checkName, checkPath, checkTtl, limitsFrom, MAX_FILE_BYTES } from './validate.ts';

export interface ImageCatalog {
  list(): ImageRecord[];
  get(name: string): ImageRecord | undefined;
  require(name: string): ImageRecord;
  buildDebian(opts: {
    name?: string;
    suite?: string;
    packages?: string[];
    onProgress?: (e: ProgressEvent) => void;
  }): Promise<ImageRecord>;
  importImage(
    name: string,
    source: string,
    opts?: { onProgress?: (e: ProgressEvent) => void },
  ): Promise<ImageRecord>;
  remove(name: string): void;
}

export type { Logger } from '../domain/logger.ts';

export interface EngineDeps {
  store: Store;
  runtime: Runtime;
  images: ImageCatalog;
  stateDir: string;
  version: string;
  log: Logger;
  defaultImage?: string;
  now?: () => number;
  /** Extra disk accounting, provided by the runtime's host (du of layers and uppers). */
  diskUsage?: () => Promise<DiskUsage>;
  /** How long a session may stay detached before its sandboxes are killed (default 2 s). */
  sessionGraceMs?: number;
  /** After a restart, how long clients have to re-attach their sessions (default 60 s). */
  sessionReattachMs?: number;
  /** Disk limits: the daemon's default and maximum, and whether the storage enforces them. */
  disk?: DiskPolicy;
  /** Host-level garbage collection of what no live sandbox uses. */
  hostGc?: (liveIds: Set<string>) => Promise<Omit<GcReport, 'removedSandboxes'>>;
}

export const DEFAULT_TENANT = 'default';

/** Who is calling: the tenant whose sandboxes they see, and the client session new sandboxes belong to. */
export interface CallerContext {
  tenant: string;
  session?: string;
}

export interface Engine extends ForkboxApi {
  /** The API as seen by one caller: only its tenant's sandboxes; creates tied to its session. */
  scoped(ctx: CallerContext): ForkboxApi;
  /**
   * A client session is attached (e.g. a stdio MCP connection). Returns the detach function. When the
   * last attachment goes, after a short grace, the session's non-persistent sandboxes are killed.
   */
  attachSession(id: string): () => void;
  /** Re-adopt live sandboxes after a (re)start. */
  recover(deadlineMs?: number): Promise<{ adopted: number; lost: string[] }>;
  /** Kill sandboxes whose TTL has passed. */
  reapExpired(): Promise<string[]>;
  close(): Promise<void>;
}

export function createEngine(deps: EngineDeps): Engine {
  const { store, runtime, images, log } = deps;
  const now = deps.now ?? Date.now;
  const defaultImage = deps.defaultImage ?? 'debian';
  const execs = createExecManager({ store, runtime, now });
  const templateConfigs = createTemplateConfigs({
    store,
    images,
    defaultImage,
    now,
    log,
    ...(runtime.releaseTemplate ? { release: runtime.releaseTemplate.bind(runtime) } : {}),
  });
  /** Per-sandbox serialisation of lifecycle operations (kill vs pause vs resume). */
  const lifecycle = new Map<string, Promise<unknown>>();
  const sessions = new Map<string, { attached: number; timer: NodeJS.Timeout | null }>();

  function serial<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const prev = lifecycle.get(id) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    lifecycle.set(id, tail);
    void tail.then(() => {
      if (lifecycle.get(id) === tail) lifecycle.delete(id);
    });
    return next;
  }

  /** A sandbox of this tenant by id or name; another tenant's sandbox is reported as not found. */
  function findFor(ctx: CallerContext, idOrName: string): SandboxRecord {
    const byId = store.getSandbox(idOrName);
    let rec = byId && byId.tenant === ctx.tenant ? byId : store.getSandboxByName(idOrName, ctx.tenant);
    // A merged winner's old id answers as the sandbox it was merged into.
    const alias = rec?.runtime.aliasOf;
    if (rec && typeof alias === 'string') rec = store.getSandbox(alias) ?? rec;
    if (!rec) throw errors.sandboxNotFound(idOrName);
    return rec;
  }

  function runningFor(ctx: CallerContext, idOrName: string): SandboxRecord {
    const rec = findFor(ctx, idOrName);
    if (rec.state !== 'running') throw errors.sandboxNotRunning(rec.id, rec.state);
    return rec;
  }

  /** Kill the session's sandboxes once it has had no client attached for the grace period. */
  function scheduleSessionEnd(id: string, graceMs: number): void {
    const s = sessions.get(id) ?? { attached: 0, timer: null };
    sessions.set(id, s);
    if (s.timer) clearTimeout(s.timer);
    s.timer = setTimeout(() => {
      if (s.attached > 0) return;
      sessions.delete(id);
      const doomed = store.listSandboxes({ session: id, states: ['running', 'paused'] });
      for (const rec of doomed) {
        kill(rec, 'its client session ended (create it with persistent: true to keep it)').catch(
          (e: unknown) => log.warn({ sandbox: rec.id, err: String(e) }, 'session cleanup failed'),
        );
      }
    }, graceMs);
    s.timer.unref?.();
  }

  /** The record as the API shows it, with its live children. */
  function withKids(rec: SandboxRecord): SandboxInfo {
    const kids = store
      .listSandboxes({ states: ['creating', 'running', 'paused'] })
      .filter((r) => r.parentId === rec.id)
      .map((r) => r.id);
    return info(rec, kids);
  }

  async function create(
    ctx: CallerContext,
    req: CreateSandboxRequest,
    lowers?: string[],
  ): Promise<SandboxRecord> {
    // The named template config (or 'default') picks the image and the modules it starts with.
    const tpl = templateConfigs.resolve(req);
    const image = tpl.image;
    const limits = limitsFrom(req, deps.disk);
    const ttl = checkTtl(req.ttlSeconds);
    const env = checkEnv(req.env);
    const id = `sb-${randomBytes(5).toString('hex')}`;
    const name = req.name === undefined ? id : checkName(req.name);
    const sameName = req.name === undefined ? undefined : store.getSandboxByName(name, ctx.tenant);
    if (sameName && isLive(sameName.state)) {
      throw new ForkboxError(
        'already_exists',
        `a live sandbox is already named '${name}'. Pick another name or kill it first.`,
        {
          name,
        },
      );
    }
    const t = now();
    const rec: SandboxRecord = {
      id,
      name,
      state: 'creating',
      image: image.name,
      templateId: '',
      parentId: null,
      depth: 0,
      limits,
      env,
      labels: tpl.labels,
      expiresAt: ttl === undefined ? null : t + ttl * 1000,
      createdAt: t,
      updatedAt: t,
      hostPid: null,
      runtime: {},
      endReason: null,
      tenant: ctx.tenant,
      session: req.persistent === true ? null : (ctx.session ?? null),
    };
    store.insertSandbox(rec);
    try {
      const h = await runtime.createSandbox({
        id,
        name,
        image: image.name,
        limits,
        env,
        ...(lowers ? { lowers } : {}),
        prewarm: tpl.prewarm,
      });
      const templateId = typeof h.runtime.templateId === 'string' ? h.runtime.templateId : '';
      return store.transitionSandbox(id, 'running', { hostPid: h.hostPid, runtime: h.runtime, templateId });
    } catch (e) {
      try {
        store.transitionSandbox(id, 'failed', { endReason: e instanceof Error ? e.message : String(e) });
      } catch {
        // already moved on
      }
      throw e;
    }
  }

  const { kill, killTree, fork, merge } = createLineage({
    store,
    runtime,
    log,
    now,
    serial,
    abandonExecs: (id) => execs.abandon(id),
    withKids,
    ...(deps.disk ? { disk: deps.disk } : {}),
  });
  const snapshots = createSnapshots({ store, runtime, now, serial, fork, create, kill, killTree });

  function makeApi(ctx: CallerContext): ForkboxApi {
    const find = (idOrName: string) => findFor(ctx, idOrName);
    const running = (idOrName: string) => runningFor(ctx, idOrName);
    return {
      async status(): Promise<SystemStatus> {
        const counts = store.countSandboxesByState(ctx.tenant);
        return {
          version: deps.version,
          runtime: runtime.name,
          capabilities: runtime.capabilities,
          stateDir: deps.stateDir,
          sandboxes: counts,
          templates: store.listTemplates().length,
        };
      },

      createSandbox: async (req: CreateSandboxRequest) => withKids(await create(ctx, req)),

      async listSandboxes(opts) {
        const filter = opts?.all ? {} : { states: ['creating', 'running', 'paused', 'killing'] as const };
        const recs = store.listSandboxes({
          ...filter,
          tenant: ctx.tenant,
          ...(opts?.labels ? { labels: opts.labels } : {}),
        });
        const kids = new Map<string, string[]>();
        for (const r of store.listSandboxes({
          states: ['creating', 'running', 'paused'],
          tenant: ctx.tenant,
        })) {
          if (r.parentId) kids.set(r.parentId, [...(kids.get(r.parentId) ?? []), r.id]);
        }
        const showHolders = opts?.labels !== undefined && SNAPSHOT_LABEL in opts.labels;
        return recs
          .filter((r) => showHolders || r.labels[SNAPSHOT_LABEL] === undefined)
          .map((r) => info(r, kids.get(r.id) ?? []));
      },

      async getSandbox(idOrName, opts) {
        const rec = find(idOrName);
        const out = withKids(rec);
        if (opts?.usage && (rec.state === 'running' || rec.state === 'paused'))
          out.usage = await runtime.usage(rec);
        return out;
      },

      async killSandbox(idOrName, opts) {
        const rec = find(idOrName);
        return withKids(
          await (opts?.cascade ? killTree(rec, 'killed on request') : kill(rec, 'killed on request')),
        );
      },

      forkSandbox: async (idOrName, req) => fork(ctx, running(idOrName), req),
      mergeSandbox: async (parentId, winnerId) => merge(ctx, find(parentId), find(winnerId)),

      createSnapshot: async (idOrName, opts) => snapshots.create(ctx, running(idOrName), opts?.name),
      listSnapshots: async () => snapshots.list(ctx.tenant),
      getSnapshot: async (idOrName) => snapshots.get(ctx.tenant, idOrName),
      deleteSnapshot: async (idOrName, opts) =>
        snapshots.remove(ctx.tenant, idOrName, opts?.cascade === true),
      restoreSnapshot: async (idOrName, req) => snapshots.restore(ctx, idOrName, req ?? {}),
      diffSandboxes: (a, b, opts) =>
        diffSandboxRecords({ runtime, store, tenant: ctx.tenant, find }, a, b, opts),

      async pauseSandbox(idOrName) {
        const rec = find(idOrName);
        return serial(rec.id, async () => {
          const cur = running(rec.id);
          await runtime.pauseSandbox(cur);
          return withKids(store.transitionSandbox(cur.id, 'paused'));
        });
      },

      async resumeSandbox(idOrName) {
        const rec = find(idOrName);
        return serial(rec.id, async () => {
          const cur = find(rec.id);
          if (cur.state === 'running') return withKids(cur);
          if (cur.state !== 'paused') throw errors.sandboxNotRunning(cur.id, cur.state);
          await runtime.resumeSandbox(cur);
          return withKids(store.transitionSandbox(cur.id, 'running'));
        });
      },

      async extendSandbox(idOrName, ttlSeconds) {
        const rec = find(idOrName);
        if (!isLive(rec.state)) throw errors.sandboxNotRunning(rec.id, rec.state);
        const ttl = checkTtl(ttlSeconds) ?? 0;
        return withKids(store.updateSandbox(rec.id, { expiresAt: now() + ttl * 1000 }));
      },

      exec: async (idOrName, req, onOutput) => execs.run(running(idOrName), req, onOutput),
      startExec: async (idOrName, req) => execs.start(running(idOrName), req),
      pollExec: async (idOrName, execId, opts) =>
        execs.poll(find(idOrName), execId, opts?.afterSeq ?? -1, opts?.waitMs ?? 0),
      writeExecStdin: async (idOrName, execId, data, eof) =>
        execs.writeStdin(running(idOrName), execId, data, eof ?? false),
      cancelExec: async (idOrName, execId) => execs.cancel(find(idOrName), execId),
      listExecs: async (idOrName) => execs.list(find(idOrName)),

      async runCode(idOrName, req: CodeRunRequest): Promise<ReplResult> {
        const rec = running(idOrName);
        const language = req.language ?? 'python';
        const timeoutMs = Math.round((req.timeoutSeconds ?? 0) * 1000);
        if (language === 'python') {
          return runtime.replEval(rec, req.code, {
            timeoutMs,
            ...(req.maxOutputBytes === undefined ? {} : { maxOutputBytes: req.maxOutputBytes }),
          });
        }
        const argv = language === 'bash' ? ['bash', '-c', req.code] : ['node', '-e', req.code];
        const o = await execs.run(rec, {
          argv,
          ...(req.timeoutSeconds === undefined ? {} : { timeoutSeconds: req.timeoutSeconds }),
          ...(req.maxOutputBytes === undefined ? {} : { maxOutputBytes: req.maxOutputBytes }),
        });
        const failed = o.exitCode !== 0;
        return {
          ok: !failed,
          value: null,
          stdout: o.stdout,
          stderr: o.stderr,
          error: failed
            ? {
                type: o.timedOut ? 'Timeout' : 'ExitStatus',
                message:
                  o.exitCode === 127
                    ? `${argv[0]} is not installed in this sandbox's image`
                    : `exited with ${o.exitCode ?? `signal ${o.signal}`}`,
                traceback: '',
              }
            : null,
          timedOut: o.timedOut,
          interrupted: false,
          restarted: false,
          truncated: o.truncated,
          oomKilled: o.oomKilled,
          images: [],
          durationMs: o.durationMs,
        };
      },

      async resetCode(idOrName) {
        await runtime.replRestart(running(idOrName));
      },

      readFile: async (idOrName, path, opts) => runtime.readFile(running(idOrName), checkPath(path), opts),
      async writeFile(idOrName, path, data, opts) {
        if (data.length > MAX_FILE_BYTES) {
          throw new ForkboxError(
            'too_large',
            `file is ${data.length} bytes, over the ${MAX_FILE_BYTES}-byte limit of one write. Split it, or copy a tar archive and unpack it inside.`,
            { limit: MAX_FILE_BYTES },
          );
        }
        return runtime.writeFile(running(idOrName), checkPath(path), data, opts);
      },
      listFiles: async (idOrName, path, opts) => runtime.listFiles(running(idOrName), checkPath(path), opts),
      statFile: async (idOrName, path) => runtime.statFile(running(idOrName), checkPath(path)),
      deleteFile: async (idOrName, path, opts) =>
        runtime.deleteFile(running(idOrName), checkPath(path), opts),
      mkdir: async (idOrName, path) => runtime.mkdir(running(idOrName), checkPath(path), { parents: true }),
      moveFile: async (idOrName, from, to, opts) =>
        runtime.moveFile(running(idOrName), checkPath(from), checkPath(to), opts),

      defineTemplate: async (req) =>
        templateConfigs.define(req, { tenant: ctx.tenant, hostTenant: DEFAULT_TENANT }),
      listTemplates: async () => templateConfigs.list(),
      deleteTemplate: (name) =>
        templateConfigs.remove(name, { tenant: ctx.tenant, hostTenant: DEFAULT_TENANT }),

      listImages: async () => images.list(),
      buildImage: (req, onProgress) =>
        images.buildDebian({
          ...(req.name === undefined ? {} : { name: req.name }),
          ...(req.suite === undefined ? {} : { suite: req.suite }),
          ...(req.packages === undefined ? {} : { packages: req.packages }),
          ...(onProgress === undefined ? {} : { onProgress }),
        }),
      importImage: (name, source, onProgress) =>
        images.importImage(name, source, onProgress ? { onProgress } : {}),
      async removeImage(name) {
        images.require(name);
        const users = store
          .listSandboxes({ states: ['creating', 'running', 'paused', 'killing'] })
          .filter((s) => s.image === name);
        if (users.length > 0) {
          throw new ForkboxError(
            'conflict',
            `image '${name}' is used by ${users.length} live sandbox(es) (${users
              .slice(0, 5)
              .map((s) => s.id)
              .join(', ')}). Kill them first.`,
            { image: name },
          );
        }
        images.remove(name);
      },

      gc: () => engine.gc(),
      df: () => engine.df(),
    };
  }

  const engine: Engine = {
    ...makeApi({ tenant: DEFAULT_TENANT }),
    scoped: makeApi,

    attachSession(id: string): () => void {
      const s = sessions.get(id) ?? { attached: 0, timer: null };
      sessions.set(id, s);
      s.attached++;
      if (s.timer) clearTimeout(s.timer);
      s.timer = null;
      let done = false;
      return () => {
        if (done) return;
        done = true;
        s.attached--;
        if (s.attached === 0) scheduleSessionEnd(id, deps.sessionGraceMs ?? 2000);
      };
    },

    async gc(): Promise<GcReport> {
      const removedSandboxes = await engine.reapExpired();
      const live = new Set(
        store.listSandboxes({ states: ['creating', 'running', 'paused', 'killing'] }).map((s) => s.id),
      );
      const host = deps.hostGc
        ? await deps.hostGc(live)
        : { removedMounts: [], removedCgroups: [], removedDirs: [] };
      return { removedSandboxes, ...host };
    },

    async df(): Promise<DiskUsage> {
      if (deps.diskUsage) return deps.diskUsage();
      return { stateDir: deps.stateDir, images: [], sandboxes: [], totalBytes: 0 };
    },

    async recover(deadlineMs = 5000) {
      const live = store.listSandboxes({ states: ['creating', 'running', 'paused', 'killing'] });
      // A sandbox left half-created or half-killed by a crash is finished off, not adopted.
      for (const rec of live.filter((s) => s.state === 'creating' || s.state === 'killing')) {
        if (rec.state === 'creating') store.transitionSandbox(rec.id, 'killing');
        await runtime
          .killSandbox(store.getSandbox(rec.id) ?? rec)
          .catch((e: unknown) => log.warn({ sandbox: rec.id, err: String(e) }, 'cleanup failed'));
        store.transitionSandbox(rec.id, 'killed', {
          endReason: 'interrupted by a daemon restart',
          hostPid: null,
        });
      }
      const adoptable = store.listSandboxes({ states: ['running', 'paused'] });
      const { lost } = await runtime.recover(adoptable, store.listTemplates(), deadlineMs);
      for (const id of lost) {
        store.transitionSandbox(id, 'lost', {
          endReason: 'its processes were gone after a daemon restart or reboot',
        });
        const rec = store.getSandbox(id);
        if (rec) await kill(rec, 'lost').catch(() => undefined);
      }
      // Sessions do not survive a restart: their clients get a while to re-attach before their
      // sandboxes are killed.
      const orphaned = new Set(
        store.listSandboxes({ states: ['running', 'paused'] }).flatMap((r) => (r.session ? [r.session] : [])),
      );
      for (const id of orphaned)
        if (!sessions.has(id)) scheduleSessionEnd(id, deps.sessionReattachMs ?? 60_000);
      const interrupted = store.markRunningExecs('interrupted');
      if (interrupted > 0)
        log.info({ interrupted }, 'execs in flight during the restart were marked interrupted');
      return { adopted: adoptable.length - lost.length, lost };
    },

    async reapExpired() {
      const t = now();
      const expired = store
        .listSandboxes({ states: ['running', 'paused'] })
        .filter((s) => s.expiresAt !== null && s.expiresAt <= t);
      const reaped: string[] = [];
      for (const rec of expired) {
        try {
          await kill(rec, 'TTL expired');
          reaped.push(rec.id);
        } catch (e) {
          log.warn({ sandbox: rec.id, err: String(e) }, 'TTL reap failed');
        }
      }
      return reaped;
    },

    async close() {
      for (const s of sessions.values()) if (s.timer) clearTimeout(s.timer);
      await Promise.allSettled([...lifecycle.values()]);
    },
  };
  return engine;
}
