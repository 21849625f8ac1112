/**
 * The engine: implements ForkboxApi over a Runtime, a Store and an image catalog. Owns sandbox
 * lifecycles (every transition through the store's state machine), TTL reaping and exec bookkeeping.
 */
import type { Logger } from '../domain/logger.ts';
import { runtimeId } from '../domain/runtime-id.ts';
import type { SandboxRecord } from '../domain/types.ts';
import { createKeyedQueue } from '../util/keyed-queue.ts';
import type { DiskUsage, ForkboxApi, GcReport, SandboxInfo } from './api.ts';
import { adminApi } from './api-admin.ts';
import { fileApi } from './api-files.ts';
import { sandboxApi } from './api-sandboxes.ts';
import { browserApi } from './browser/api-browser.ts';
import { type CallerContext, createSandboxFinder, DEFAULT_TENANT } from './caller.ts';
import { createDiffPages } from './diff/diff-pages.ts';
import { createHeavyCalls } from './diff/heavy-calls.ts';
import type { EngineParts } from './engine-parts.ts';
import { execApi } from './execs/api-execs.ts';
import type { ExecSettings } from './execs/exec-launch.ts';
import { createExecManager } from './execs/exec-manager.ts';
import { createLineage } from './lineage/lineage.ts';
import type { Browsers, ImageStore, Runtime, Store } from './ports.ts';
import { recoverSandboxes } from './recovery.ts';
import type { DiskPolicy } from './sandboxes/disk-limits.ts';
import type { NetworkCap } from './sandboxes/network-cap.ts';
import { type CreateSandbox, createSandboxMaker } from './sandboxes/sandbox-create.ts';
import { createExitHandler } from './sandboxes/sandbox-exit.ts';
import { info } from './sandboxes/sandbox-info.ts';
import { createSandboxPorts } from './sandboxes/sandbox-ports.ts';
import { createTemplateConfigs, DEFAULT_TEMPLATE } from './sandboxes/template-configs.ts';
import { type AttachOptions, createSessions, type Detach, type Sessions } from './sessions.ts';
import { createSnapshots } from './snapshots/snapshots.ts';
import { createWarmPool, POOL_LABEL, POOL_TENANT, type PoolStats, type WarmPool } from './warm-pool.ts';

export type { Logger } from '../domain/logger.ts';

export interface EngineDeps {
  store: Store;
  runtime: Runtime;
  /** The sandboxes' browsers (src/browser/, wired by composition.ts); none: browser actions are refused. */
  browsers?: Browsers;
  images: ImageStore;
  stateDir: string;
  version: string;
  log: Logger;
  defaultImage?: string;
  /**
   * The image whose python3 runs the agent in sandboxes of images without one (the native runtime's
   * choice): removing it is refused while such sandboxes live.
   */
  agentRuntimeImage?: string;
  now?: () => number;
  /** Extra disk accounting, provided by the runtime's host (du of layers and uppers). */
  diskUsage?: () => Promise<DiskUsage>;
  /** How long a session may stay detached before its sandboxes are killed (default 2 s). */
  sessionGraceMs?: number;
  /**
   * After a restart, how long clients have to re-attach their sessions (default 10 min: the default
   * grace of MCP sessions, whose clients come back for their default sandbox's REPL state).
   */
  sessionReattachMs?: number;
  /** Disk limits: the daemon's default and maximum, and whether the storage enforces them. */
  disk?: DiskPolicy;
  /** The daemon's cap on network policies (`forkbox serve --network-max/--network-allow`). */
  networkCap?: NetworkCap;
  /** Host directories projects may be under (`forkbox serve --project-root`); none: no projects. */
  projectRoots?: readonly string[];
  /**
   * Host-level garbage collection of what no live sandbox uses: `keep` holds the runtime ids of every
   * sandbox holding processes (live ones and tombstones); `ours(id)` says whether this store knows an id.
   */
  hostGc?: (keep: Set<string>, ours: (id: string) => boolean) => Promise<Omit<GcReport, 'removedSandboxes'>>;
  /** Daemon defaults for exec output (per stream): inline budget and spool file size. */
  execSettings?: Partial<ExecSettings>;
  /**
   * Sandboxes the warm pool keeps ready per template unless its definition says (`forkbox serve
   * --pool`; default 0: off). The pool starts filling after `recover`.
   */
  poolSize?: number;
}

export { type CallerContext, DEFAULT_TENANT } from './caller.ts';
export type { AttachOptions, Detach } from './sessions.ts';

export interface Engine extends ForkboxApi {
  /** The API as seen by one caller: only its tenant's sandboxes; creates tied to its session. */
  scoped(ctx: CallerContext): ForkboxApi;
  /**
   * A client session is attached (e.g. a stdio MCP connection). Returns the detach function. When the
   * last attachment goes, after its grace (`opts.graceMs`, else the engine's), the session's
   * non-persistent sandboxes are killed.
   */
  attachSession(id: string, opts?: AttachOptions): Detach;
  /** Re-adopt live sandboxes after a (re)start. */
  recover(deadlineMs?: number): Promise<{ adopted: number; lost: string[]; revived: string[] }>;
  /** Kill sandboxes whose TTL has passed. */
  reapExpired(): Promise<string[]>;
  /** The warm pool per template: ready, target, hits, misses (served on /metrics). */
  poolStats(): PoolStats[];
  /** Shut down: close browsers and the warm pool, wait for lifecycle calls in flight, flush exec output. */
  close(): Promise<void>;
}

/** What the engine builds first: what needs none of its other parts. */
function baseParts(deps: EngineDeps) {
  const { store, runtime, images, log } = deps;
  const now = deps.now ?? Date.now;
  const defaultImage = deps.defaultImage ?? 'debian';
  const execs = createExecManager({
    store,
    runtime,
    now,
    log,
    ...(deps.execSettings ? { settings: deps.execSettings } : {}),
  });
  const templateConfigs = createTemplateConfigs({
    store,
    images,
    defaultImage,
    now,
    log,
    ...(runtime.releaseTemplate ? { release: runtime.releaseTemplate.bind(runtime) } : {}),
  });
  const lifecycle = createKeyedQueue();
  const finder = createSandboxFinder(store);
  return { now, defaultImage, execs, templateConfigs, lifecycle, finder };
}

type BaseParts = ReturnType<typeof baseParts>;

/** The record as the API shows it, with its live children. */
function infoWithKids(store: Store, rec: SandboxRecord): SandboxInfo {
  const kids = store
    .listSandboxes({ states: ['creating', 'running', 'paused'] })
    .filter((r) => r.parentId === rec.id)
    .map((r) => r.id);
  return info(rec, kids);
}

/**
 * Creates, the lineage (kill, fork, merge), snapshots and sessions, and the runtime's exit events wired
 * to them. `pool`: the warm pool, made after (it creates through `create`).
 */
function lifecycleParts(deps: EngineDeps, base: BaseParts, pool: () => WarmPool) {
  const { store, runtime, log } = deps;
  const { now, execs, templateConfigs, lifecycle } = base;
  const kids = (rec: SandboxRecord) => infoWithKids(store, rec);
  const create = createSandboxMaker({
    store,
    runtime,
    templateConfigs,
    now,
    ...(deps.disk ? { disk: deps.disk } : {}),
    ...(deps.networkCap ? { networkCap: deps.networkCap } : {}),
    ...(deps.projectRoots ? { projectRoots: deps.projectRoots } : {}),
    images: deps.images,
    pool,
  });
  const lineage = createLineage({
    store,
    runtime,
    log,
    now,
    serial: lifecycle.run,
    abandonExecs: (id) => execs.abandon(id),
    withKids: kids,
    ...(deps.disk ? { disk: deps.disk } : {}),
  });
  const { kill, killTree, fork, releaseTombstones, nsParentOf } = lineage;
  const snapshots = createSnapshots({
    store,
    runtime,
    now,
    serial: lifecycle.run,
    fork,
    create,
    kill,
    killTree,
  });
  const sessions = createSessions({ store, log, kill, graceMs: deps.sessionGraceMs ?? 2000 });
  // Sandboxes that end on their own become failed, with the runtime's reason.
  runtime.setEvents?.({
    onSandboxExited: createExitHandler({
      store,
      runtime,
      log,
      serial: lifecycle.run,
      abandonExecs: (id) => execs.abandon(id),
      releaseTombstones,
      nsParentOf,
    }),
  });
  return { create, lineage, snapshots, sessions, withKids: kids };
}

/**
 * The warm pool: per template, the size its config asks (else the daemon's), its recipe (image id and
 * modules), and pooled sandboxes made by `create` for POOL_TENANT.
 */
function enginePool(
  deps: EngineDeps,
  defaultImage: string,
  create: CreateSandbox,
  kill: (rec: SandboxRecord, reason: string) => Promise<SandboxRecord>,
): WarmPool {
  const { store, runtime, images, log } = deps;
  const poolSize = deps.poolSize ?? 0;
  return createWarmPool({
    store,
    log,
    targets: () => [
      { template: DEFAULT_TEMPLATE, size: poolSize },
      ...store.listTemplateConfigs().map((c) => ({ template: c.name, size: c.pool ?? poolSize })),
    ],
    recipeOf(template) {
      const cfg = template === DEFAULT_TEMPLATE ? undefined : store.getTemplateConfig(template);
      const image = images.get(cfg ? cfg.image : defaultImage);
      return image ? `${image.id}|${(cfg?.prewarm ?? []).join(',')}` : null;
    },
    make: (template, tenant) =>
      create(
        { tenant: POOL_TENANT, poolFor: tenant },
        { template, persistent: true, labels: { [POOL_LABEL]: template } },
      ),
    prepare: async (rec) => runtime.prepareExecs?.(rec),
    kill: (rec, reason) => kill(rec, reason),
  });
}

/**
 * What no sandbox of this store uses goes. Kept: every sandbox holding processes — live ones and
 * tombstones (their PID 1 holds descendants) — by runtime id (after a merge, a record names another's).
 */
async function hostGc(deps: EngineDeps): Promise<Omit<GcReport, 'removedSandboxes'>> {
  const { store } = deps;
  if (!deps.hostGc) return { removedMounts: [], removedCgroups: [], removedDirs: [] };
  const keep = new Set(store.listPidNamespaceHolders().map(runtimeId));
  return deps.hostGc(keep, (id) => store.getSandbox(id) !== undefined);
}

/** Kill the sandboxes whose TTL has passed; their ids. */
async function reapExpired(p: Pick<EngineParts, 'store' | 'now' | 'kill' | 'log'>): Promise<string[]> {
  const t = p.now();
  const expired = p.store
    .listSandboxes({ states: ['running', 'paused'] })
    .filter((s) => s.expiresAt !== null && s.expiresAt <= t);
  const reaped: string[] = [];
  for (const rec of expired) {
    try {
      await p.kill(rec, 'TTL expired');
      reaped.push(rec.id);
    } catch (e) {
      p.log.warn({ sandbox: rec.id, err: String(e) }, 'TTL reap failed');
    }
  }
  return reaped;
}

/** Engine.recover: re-adopt the live sandboxes, sweep what a crash left, give sessions time, refill the pool. */
async function recover(
  deps: EngineDeps,
  parts: EngineParts,
  sessions: Sessions,
  deadlineMs: number,
): Promise<Awaited<ReturnType<Engine['recover']>>> {
  const { store, runtime, log, kill, now, execs, ports, pool } = parts;
  const out = await recoverSandboxes(
    { store, runtime, log, kill, now, recoverExecs: (sandboxes) => execs.recover(sandboxes) },
    deadlineMs,
  );
  await ports.reopen();
  // Whatever a crash left without an owner (a half-made sandbox's mounts, cgroup, dirs) goes now.
  const swept = await hostGc(deps).catch((e: unknown) => {
    log.warn({ err: String(e) }, 'sweeping what a crash left behind failed');
    return null;
  });
  if (swept && swept.removedMounts.length + swept.removedCgroups.length + swept.removedDirs.length > 0)
    log.info(swept, 'removed what a crash left behind');
  // Sessions do not survive a restart: their clients get a while to re-attach before their
  // sandboxes are killed.
  sessions.expireOrphans(deps.sessionReattachMs ?? 10 * 60_000);
  // Untaken pooled sandboxes of the daemon before are killed (no tenant will ever take them), then
  // the pool fills afresh.
  const reclaimed = await pool.reclaim();
  if (reclaimed > 0) log.info({ reclaimed }, 'killed the warm pool a previous daemon left');
  pool.sync();
  return out;
}

export function createEngine(deps: EngineDeps): Engine {
  const { store, runtime, images, log } = deps;
  const base = baseParts(deps);
  const { now, execs, templateConfigs, lifecycle, finder } = base;
  const { create, lineage, snapshots, sessions, withKids } = lifecycleParts(deps, base, () => pool);
  const { kill, killTree, fork, merge } = lineage;
  const pool = enginePool(deps, base.defaultImage, create, kill);
  const reap = () => reapExpired({ store, now, kill, log });

  const ports = createSandboxPorts({ store, runtime, log });
  const browsers = deps.browsers;
  const parts: EngineParts = {
    ...finder,
    agentRuntimeImage: deps.agentRuntimeImage ?? null,
    ports,
    store,
    runtime,
    images,
    log,
    now,
    version: deps.version,
    stateDir: deps.stateDir,
    execs,
    templateConfigs,
    pool,
    snapshots,
    lifecycle,
    create,
    kill,
    killTree,
    fork,
    merge,
    withKids,
    browsers,
    heavy: createHeavyCalls(),
    diffPages: createDiffPages(),
    async gc(): Promise<GcReport> {
      const removedSandboxes = await reap();
      return { removedSandboxes, ...(await hostGc(deps)) };
    },
    async df(): Promise<DiskUsage> {
      if (deps.diskUsage) return deps.diskUsage();
      return { stateDir: deps.stateDir, images: [], sandboxes: [], totalBytes: 0 };
    },
  };

  const makeApi = (ctx: CallerContext): ForkboxApi => ({
    ...sandboxApi(parts, ctx),
    ...execApi(parts, ctx),
    ...fileApi(parts, ctx),
    ...adminApi(parts, ctx),
    ...browserApi(parts, ctx),
  });

  return {
    ...makeApi({ tenant: DEFAULT_TENANT }),
    scoped: makeApi,
    attachSession: (id, opts) => sessions.attach(id, opts),
    recover: (deadlineMs = 5000) => recover(deps, parts, sessions, deadlineMs),
    reapExpired: reap,
    poolStats: () => pool.stats(),
    async close() {
      await browsers?.closeAll();
      await pool.close();
      sessions.close();
      await lifecycle.drain();
      execs.flush();
    },
  };
}
