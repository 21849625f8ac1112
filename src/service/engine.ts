/**
 * The engine: implements ForkboxApi over a Runtime, a Store and an image catalog. Owns sandbox
 * lifecycles (every transition through the store's state machine), TTL reaping and exec bookkeeping.
 */
import { randomBytes } from 'node:crypto';
import { errors, ForkboxError } from '../domain/errors.ts';
import { isLive } from '../domain/sandbox-state.ts';
import type { ImageRecord, SandboxRecord } from '../domain/types.ts';
import type {
  CodeRunRequest,
  CreateSandboxRequest,
  DiskUsage,
  ForkboxApi,
  ForkChildResult,
  ForkRequest,
  ForkResult,
  GcReport,
  MergeResult,
  ProgressEvent,
  SandboxInfo,
  SystemStatus,
} from './api.ts';
import { diffSandboxRecords } from './diff.ts';
import { createExecManager } from './exec-manager.ts';
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

export interface Logger {
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

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

/** Label on the hidden record that keeps a merged parent's old processes until they end. */
export const MERGED_LABEL = 'forkbox.merged-into';
/** The runtime's id of a sandbox (see runtimes/native runtimeId): after a merge it differs from the public id. */
const runtimeIdOf = (r: SandboxRecord): string => (typeof r.runtime.rid === 'string' ? r.runtime.rid : r.id);

/** One fork call makes at most this many children. */
export const MAX_FORK_CHILDREN = 100;

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

  /** The sandbox whose PID 1 holds this one's pid namespace (its parent, unless a merge moved it). */
  const nsParentOf = (r: SandboxRecord): string | null =>
    typeof r.runtime.nsParent === 'string' ? r.runtime.nsParent : r.parentId;
  /** A sandbox whose PID 1 still holds a pid namespace: live, or a tombstone waiting for descendants. */
  const holds = (r: SandboxRecord) => isLive(r.state) || r.runtime.tombstone === true;
  const childrenHolding = (id: string) =>
    store.listSandboxes().filter((r) => nsParentOf(r) === id && holds(r));

  async function kill(rec: SandboxRecord, reason: string): Promise<SandboxRecord> {
    const done = await serial(rec.id, async () => {
      const cur = store.getSandbox(rec.id) ?? rec;
      if (!isLive(cur.state) && cur.state !== 'lost') return cur;
      if (cur.state !== 'killing') store.transitionSandbox(cur.id, 'killing');
      execs.abandon(cur.id);
      // Descendants live inside this sandbox's pid namespace: killing its PID 1 would kill them all.
      // Its own processes die; PID 1 stays as a tombstone until the last descendant ends.
      const waiting = childrenHolding(cur.id).length;
      try {
        await runtime.killSandbox(cur, { keepInit: waiting > 0 });
      } catch (e) {
        log.error({ sandbox: cur.id, err: String(e) }, 'kill failed');
        throw e;
      }
      return waiting > 0
        ? store.transitionSandbox(cur.id, 'killed', {
            endReason: `${reason} (its PID 1 stays until its ${waiting} child sandbox(es) end)`,
            runtime: { ...cur.runtime, tombstone: true },
          })
        : store.transitionSandbox(cur.id, 'killed', { endReason: reason, hostPid: null });
    });
    if (done.runtime.tombstone !== true) await releaseTombstones(nsParentOf(done));
    return done;
  }

  /** Finish off ancestors that were tombstones waiting only for this subtree. */
  async function releaseTombstones(parentId: string | null): Promise<void> {
    let p = parentId;
    while (p) {
      const prec = store.getSandbox(p);
      if (prec?.runtime.tombstone !== true || childrenHolding(p).length > 0) return;
      await serial(p, async () => {
        await runtime.killSandbox(prec);
        store.updateSandbox(prec.id, { runtime: { ...prec.runtime, tombstone: false }, hostPid: null });
      });
      p = nsParentOf(prec);
    }
  }

  /** Kill a sandbox and its whole subtree, deepest first. */
  async function killTree(rec: SandboxRecord, reason: string): Promise<SandboxRecord> {
    const below = store
      .listSandboxes()
      .filter((r) => (r.parentId === rec.id || nsParentOf(r) === rec.id) && r.id !== rec.id && holds(r));
    for (const child of below) await killTree(child, `${reason} (cascade from ${rec.id})`);
    return kill(store.getSandbox(rec.id) ?? rec, reason);
  }

  async function fork(
    ctx: CallerContext,
    source: SandboxRecord,
    req: ForkRequest,
    opts: { session?: string | null; dropLabels?: string[] } = {},
  ): Promise<ForkResult> {
    const started = now();
    const n = req.n ?? 1;
    if (!Number.isInteger(n) || n < 1 || n > MAX_FORK_CHILDREN) {
      throw errors.invalid(`n must be a whole number from 1 to ${MAX_FORK_CHILDREN} (got ${n}).`, { n });
    }
    if (req.names !== undefined && req.names.length !== n) {
      throw errors.invalid(`give exactly n = ${n} names, or none (got ${req.names.length}).`);
    }
    const names = (req.names ?? []).map(checkName);
    for (const name of names) {
      const same = store.getSandboxByName(name, ctx.tenant);
      if ((same && isLive(same.state)) || names.indexOf(name) !== names.lastIndexOf(name)) {
        throw new ForkboxError(
          'already_exists',
          `a live sandbox is already named '${name}'. Pick other names.`,
          { name },
        );
      }
    }
    const limits = limitsFrom({
      memoryMb: req.memoryMb ?? source.limits.memoryBytes / 2 ** 20,
      cpus: req.cpus ?? source.limits.cpus,
      pids: req.pids ?? source.limits.pids,
    });
    const ttl = checkTtl(req.ttlSeconds);
    const env = { ...source.env, ...checkEnv(req.env) };
    const t = now();
    const children: SandboxRecord[] = [];
    for (let i = 0; i < n; i++) {
      const id = `sb-${randomBytes(5).toString('hex')}`;
      const rec: SandboxRecord = {
        ...source,
        id,
        name: names[i] ?? id,
        state: 'creating',
        parentId: source.id,
        depth: source.depth + 1,
        limits,
        env,
        labels: Object.fromEntries(
          Object.entries({ ...source.labels, ...(req.labels ?? {}) }).filter(
            ([k]) => !opts.dropLabels?.includes(k),
          ),
        ),
        ...(opts.session === undefined ? {} : { session: opts.session }),
        // A child's TTL is its own: given, or what was left of the source's.
        expiresAt: ttl !== undefined ? t + ttl * 1000 : source.expiresAt,
        createdAt: t,
        updatedAt: t,
        hostPid: null,
        runtime: {},
        endReason: null,
      };
      store.insertSandbox(rec);
      children.push(rec);
    }
    let outcome: Awaited<ReturnType<Runtime['forkSandbox']>>;
    try {
      outcome = await runtime.forkSandbox(
        source,
        children.map((c, i) => ({ id: c.id, name: c.name, env: c.env, limits: c.limits, forkIndex: i })),
        { wait: req.wait !== false },
      );
    } catch (e) {
      for (const c of children)
        store.transitionSandbox(c.id, 'failed', { endReason: e instanceof Error ? e.message : String(e) });
      throw e;
    }
    const results: ForkChildResult[] = outcome.children.map((o) => {
      if (o.ok) {
        const templateId =
          typeof o.handle.runtime.templateId === 'string' ? o.handle.runtime.templateId : source.templateId;
        const rec = store.transitionSandbox(o.id, 'running', {
          hostPid: o.handle.hostPid,
          runtime: o.handle.runtime,
          templateId,
          depth: typeof o.handle.runtime.depth === 'number' ? o.handle.runtime.depth : source.depth + 1,
        });
        return { ok: true, sandbox: info(rec) };
      }
      store.transitionSandbox(o.id, 'failed', { endReason: o.error });
      return { ok: false, error: { code: 'internal', message: o.error } };
    });
    const notCarried = [
      'processes other than the Python REPL (servers and background commands stay in the source only)',
      'threads of the REPL other than the one that forks',
      'sockets, pipes and memory maps held by the REPL',
    ];
    if (!outcome.pythonState)
      notCarried.unshift(
        `Python state: the source is ${source.depth + 1} forks deep, at the pid-namespace depth limit, so the children were forked from the template with the source's files only`,
      );
    return {
      source: source.id,
      pauseMs: Math.round(outcome.pauseMs * 100) / 100,
      snapshotMs: Math.round(outcome.snapshotMs * 100) / 100,
      driver: outcome.driver,
      durationMs: now() - started,
      carried: {
        filesystem: true,
        pythonState: outcome.pythonState && runtime.capabilities.forkProcessState,
        environment: true,
      },
      notCarried,
      children: results,
    };
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
    const limits = limitsFrom(req);
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

  const snapshots = createSnapshots({ store, runtime, now, serial, fork, create, kill, killTree });

  async function merge(
    _ctx: CallerContext,
    parent: SandboxRecord,
    winner: SandboxRecord,
  ): Promise<MergeResult> {
    if (parent.id === winner.id) {
      throw errors.invalid(
        `cannot merge sandbox '${parent.id}' into itself. Name a fork of it as the winner.`,
      );
    }
    if (winner.state !== 'running') throw errors.sandboxNotRunning(winner.id, winner.state);
    if (!isLive(parent.state)) throw errors.sandboxNotRunning(parent.id, parent.state);
    const chain: string[] = [];
    for (let p = winner.parentId; p !== null; p = store.getSandbox(p)?.parentId ?? null) {
      chain.push(p);
      if (chain.length > 64) break;
    }
    if (!chain.includes(parent.id)) {
      throw errors.invalid(
        `'${parent.id}' is not an ancestor of '${winner.id}' (whose parent is ${winner.parentId ?? 'none'}). Merge a fork into the sandbox it was forked from, or into one of that sandbox's ancestors.`,
        { parent: parent.id, winner: winner.id },
      );
    }
    return serial(parent.id, () =>
      serial(winner.id, async () => {
        const t = now();
        // The parent's old processes move to a hidden record: its PID 1 may have to stay as a tombstone,
        // since the winner (and its siblings) live inside its pid namespace.
        const old: SandboxRecord = {
          ...parent,
          id: `sb-${randomBytes(5).toString('hex')}`,
          state: 'running',
          labels: { ...parent.labels, [MERGED_LABEL]: parent.id },
          session: null,
          expiresAt: null,
          runtime: { ...parent.runtime, rid: runtimeIdOf(parent) },
          createdAt: t,
          updatedAt: t,
        };
        old.name = old.id;
        const parentPaused = parent.state === 'paused';
        store.insertSandbox({ ...old, state: 'creating' });
        store.transitionSandbox(old.id, 'running');
        if (parentPaused) store.transitionSandbox(old.id, 'paused');
        for (const r of store.listSandboxes()) {
          if (r.id === old.id) continue;
          if (nsParentOf(r) === parent.id)
            store.updateSandbox(r.id, { runtime: { ...r.runtime, nsParent: old.id } });
        }
        const winnerNow = store.getSandbox(winner.id) as SandboxRecord;
        for (const r of store.listSandboxes()) {
          if (r.parentId === winner.id || nsParentOf(r) === winner.id) {
            store.updateSandbox(r.id, {
              parentId: r.parentId === winner.id ? parent.id : r.parentId,
              runtime: nsParentOf(r) === winner.id ? { ...r.runtime, nsParent: parent.id } : r.runtime,
            });
          }
        }
        // The parent's record now names the winner's processes.
        const merged = store.updateSandbox(parent.id, {
          runtime: { ...winnerNow.runtime, rid: runtimeIdOf(winnerNow) },
          hostPid: winnerNow.hostPid,
          templateId: winnerNow.templateId,
          depth: winnerNow.depth,
          limits: winnerNow.limits,
          env: winnerNow.env,
        });
        if (parentPaused) store.transitionSandbox(parent.id, 'running');
        store.transitionSandbox(winner.id, 'killing');
        store.transitionSandbox(winner.id, 'killed', {
          endReason: `merged into ${parent.id}`,
          hostPid: null,
          runtime: { aliasOf: parent.id },
        });
        return merged;
      }),
    ).then(async (merged) => {
      const old = store
        .listSandboxes({ states: ['running', 'paused'] })
        .find((r) => r.labels[MERGED_LABEL] === parent.id && runtimeIdOf(r) === runtimeIdOf(parent));
      if (old) await kill(old, `replaced by its fork ${winner.id} (merge)`);
      return { sandbox: withKids(store.getSandbox(merged.id) as SandboxRecord), winner: winner.id };
    });
  }

  function makeApi(ctx: CallerContext): ForkboxApi {
    const find = (idOrName: string) => findFor(ctx, idOrName);
    const running = (idOrName: string) => runningFor(ctx, idOrName);
    return {
      async status(): Promise<SystemStatus> {
        const counts: Record<string, number> = {};
        for (const s of store.listSandboxes({ tenant: ctx.tenant }))
          counts[s.state] = (counts[s.state] ?? 0) + 1;
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
