/**
 * The warm pool (docs/ARCHITECTURE.md, "Warm pool"): per template and tenant, sandboxes created ahead of
 * time and handed to the creates that they can serve, refilled in the background at a bounded rate.
 *
 * Per tenant, because a sandbox is made from a template of its tenant's own (docs/SECURITY.md, "Sandboxes
 * that share nothing"): a pooled sandbox is made for one tenant and handed to that tenant only. The host's
 * own tenant (`default`) has its pools from the start; another tenant's pool of a template starts with its
 * first create of that template and is drained after POOL.tenantIdleMs without one.
 *
 * A pooled sandbox is an ordinary sandbox record owned by no tenant (POOL_TENANT, a name no token or
 * OIDC claim can carry), with no session, no TTL and no user labels, so no caller can list, find or
 * touch it. A create takes one in a single synchronous step (read and update of its record, with no
 * await between them: one create gets it), which gives it the caller's tenant, session, labels, TTL and
 * creation time. A pooled sandbox serves only a create it is indistinguishable for: same template, image
 * and limits, no name (a sandbox's hostname is set when it is born), no env, no network, no project.
 * Anything else is a miss and a normal create.
 */
import { isDeepStrictEqual } from 'node:util';
import { POOL } from '../domain/limits.ts';
import type { Logger } from '../domain/logger.ts';
import { isLive } from '../domain/sandbox-state.ts';
import type { SandboxRecord } from '../domain/types.ts';
import type { Store } from './ports.ts';
import { DEFAULT_TEMPLATE, TEMPLATE_LABEL } from './sandboxes/template-configs.ts';

/** The tenant of untaken pooled sandboxes: not a valid tenant name (protocol/http/tokens.ts), so no caller's. */
export const POOL_TENANT = 'forkbox:pool';
/** Label of an untaken pooled sandbox: its template. Replaced by the caller's labels at take. */
export const POOL_LABEL = 'forkbox.pool';

/** Per template, summed over tenants (metrics never name a tenant). */
export interface PoolStats {
  template: string;
  /** Sandboxes ready now. */
  size: number;
  /** How many it keeps ready. */
  target: number;
  hits: number;
  misses: number;
}

/** What a create asks beyond its would-be record: things a pooled sandbox cannot have been given. */
export interface TakeOptions {
  named: boolean;
  project: boolean;
  /** A create on given layers (a snapshot restore's holder): never pooled. */
  lowers: boolean;
}

export interface WarmPool {
  /** A ready sandbox turned into `want` (its tenant, session, labels, TTL), or undefined: a normal create. */
  take(want: SandboxRecord, opts: TakeOptions): SandboxRecord | undefined;
  /** Re-read every template's target and recipe: drain what is stale or extra, refill what is short. */
  sync(): void;
  /** Kill the ready sandboxes of a template (deleted or redefined), or of every template on an image. */
  drain(filter: { template: string } | { image: string }): Promise<void>;
  /** After a restart: kill every untaken pooled sandbox a previous daemon left (none is in this pool). */
  reclaim(): Promise<number>;
  /** Per template: ready sandboxes, target, hits and misses (summed over tenants). */
  stats(): PoolStats[];
  /** Stop refilling and kill every ready sandbox (daemon stop). */
  close(): Promise<void>;
}

export interface WarmPoolDeps {
  store: Store;
  log: Pick<Logger, 'warn' | 'info'>;
  /** Every template a pool may exist for, with how many it keeps ready (0: none). */
  targets(): { template: string; size: number }[];
  /** What a template makes now (image id + modules), or null when it cannot (its image is gone). */
  recipeOf(template: string): string | null;
  /** Create one pooled sandbox of a template for a tenant (record tenant POOL_TENANT, label POOL_LABEL). */
  make(template: string, tenant: string): Promise<SandboxRecord>;
  /** Warm a made sandbox's exec path (the runtime's prepareExecs), so its first exec after a take is quick. */
  prepare(rec: SandboxRecord): Promise<void>;
  kill(rec: SandboxRecord, reason: string): Promise<unknown>;
}

interface Entry {
  id: string;
  recipe: string;
  image: string;
}

/** The tenant whose pools are kept from the start: the host's own. */
export const HOST_TENANT = 'default';

interface TemplatePool {
  template: string;
  tenant: string;
  ready: Entry[];
  target: number;
  hits: number;
  misses: number;
  /** Bumped by a drain: a create in flight from before it is killed when it lands. */
  generation: number;
  filling: Promise<void> | null;
  lastStart: number;
  backoffMs: number;
  retry: NodeJS.Timeout | null;
  /** Drains a tenant's pool that went unused for POOL.tenantIdleMs (never the host's). */
  idle: NodeJS.Timeout | null;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** What one warm pool holds between calls. */
interface PoolState {
  deps: WarmPoolDeps;
  /** By template and tenant (keyOf). */
  pools: Map<string, TemplatePool>;
  /** Each template's size, as last synced. */
  sizes: Map<string, number>;
  closed: boolean;
}

const keyOf = (template: string, tenant: string) => `${template}\u0000${tenant}`;

function poolOf(s: PoolState, template: string, tenant: string): TemplatePool {
  let p = s.pools.get(keyOf(template, tenant));
  if (!p) {
    p = {
      template,
      tenant,
      ready: [],
      target: 0,
      hits: 0,
      misses: 0,
      generation: 0,
      filling: null,
      lastStart: 0,
      backoffMs: 0,
      retry: null,
      idle: null,
    };
    s.pools.set(keyOf(template, tenant), p);
  }
  return p;
}

/** A tenant's pool stays while it is used: its idle timer starts again at each take. */
function touch(s: PoolState, p: TemplatePool): void {
  if (p.tenant === HOST_TENANT) return;
  if (p.idle) clearTimeout(p.idle);
  p.idle = setTimeout(() => {
    p.idle = null;
    p.target = 0;
    s.pools.delete(keyOf(p.template, p.tenant));
    void drainPool(s, p, 'warm pool: unused by its tenant');
  }, POOL.tenantIdleMs);
  p.idle.unref();
}

function discard(s: PoolState, entries: Entry[], reason: string): Promise<void> {
  const { store, log } = s.deps;
  return Promise.all(
    entries.map(async (e) => {
      const rec = store.getSandbox(e.id);
      if (!rec || rec.tenant !== POOL_TENANT || !isLive(rec.state)) return;
      await s.deps.kill(rec, reason).catch((err: unknown) => {
        log.warn({ sandbox: e.id, err: String(err) }, 'could not kill a pooled sandbox');
      });
    }),
  ).then(() => undefined);
}

/** After a failed create: wait (doubling, up to POOL.maxBackoffMs), then fill again. */
function retryLater(s: PoolState, p: TemplatePool, e: unknown): void {
  p.backoffMs = Math.min(Math.max(p.backoffMs * 2, POOL.backoffMs), POOL.maxBackoffMs);
  s.deps.log.warn(
    { template: p.template, err: String(e), retryMs: p.backoffMs },
    'warm pool: a refill create failed',
  );
  if (!s.closed && !p.retry) {
    p.retry = setTimeout(() => {
      p.retry = null;
      fill(s, p);
    }, p.backoffMs);
    p.retry.unref();
  }
}

async function fillLoop(s: PoolState, p: TemplatePool): Promise<void> {
  const { deps } = s;
  const { template } = p;
  while (!s.closed && p.ready.length < p.target) {
    const wait = p.lastStart + POOL.refillGapMs - Date.now();
    if (wait > 0) await sleep(wait);
    if (s.closed) return;
    const recipe = deps.recipeOf(template);
    if (recipe === null) return;
    p.lastStart = Date.now();
    const gen = p.generation;
    let rec: SandboxRecord;
    try {
      rec = await deps.make(template, p.tenant);
    } catch (e) {
      retryLater(s, p, e);
      return;
    }
    p.backoffMs = 0;
    // What a first exec would wait for is done now, off the path of the create that takes it.
    await deps.prepare(rec).catch((e: unknown) => {
      deps.log.warn({ sandbox: rec.id, err: String(e) }, 'warm pool: could not prepare execs');
    });
    if (s.closed || gen !== p.generation || deps.recipeOf(template) !== recipe) {
      await discard(s, [{ id: rec.id, recipe, image: rec.image }], 'warm pool drained');
      continue;
    }
    p.ready.push({ id: rec.id, recipe, image: rec.image });
  }
}

function fill(s: PoolState, p: TemplatePool): void {
  if (s.closed || p.filling || p.retry || p.ready.length >= p.target) return;
  p.filling = fillLoop(s, p)
    .catch((e: unknown) =>
      s.deps.log.warn({ template: p.template, err: String(e) }, 'warm pool: refill stopped'),
    )
    .finally(() => {
      p.filling = null;
    });
}

function drainPool(s: PoolState, p: TemplatePool, reason: string): Promise<void> {
  p.generation += 1;
  return discard(s, p.ready.splice(0), reason);
}

function take(s: PoolState, want: SandboxRecord, opts: TakeOptions): SandboxRecord | undefined {
  const { deps } = s;
  const template = want.labels[TEMPLATE_LABEL] ?? DEFAULT_TEMPLATE;
  const size = s.sizes.get(template) ?? 0;
  if (s.closed || size === 0) return undefined;
  // A tenant's first create of a template starts its pool of it (this create is a miss).
  const p = poolOf(s, template, want.tenant);
  p.target = size;
  touch(s, p);
  const fits =
    !opts.named &&
    !opts.project &&
    !opts.lowers &&
    Object.keys(want.env).length === 0 &&
    (want.network?.mode ?? 'none') === 'none';
  const recipe = fits ? deps.recipeOf(template) : null;
  while (recipe !== null && p.ready.length > 0) {
    const entry = p.ready[0];
    if (!entry || entry.image !== want.image) break;
    const rec = deps.store.getSandbox(entry.id);
    if (rec && !isDeepStrictEqual(rec.limits, want.limits)) break;
    p.ready.shift();
    if (rec?.state !== 'running' || rec.tenant !== POOL_TENANT) continue;
    if (entry.recipe !== recipe) {
      void discard(s, [entry], 'warm pool: its template changed');
      continue;
    }
    // Read and update with no await between: exactly one create takes it.
    const taken = deps.store.updateSandbox(rec.id, {
      tenant: want.tenant,
      session: want.session,
      labels: want.labels,
      expiresAt: want.expiresAt,
      createdAt: want.createdAt,
      updatedAt: want.updatedAt,
    });
    p.hits += 1;
    fill(s, p);
    return taken;
  }
  p.misses += 1;
  fill(s, p);
  return undefined;
}

function sync(s: PoolState): void {
  if (s.closed) return;
  const { sizes } = s;
  sizes.clear();
  for (const t of s.deps.targets()) sizes.set(t.template, t.size);
  for (const p of s.pools.values()) {
    const size = sizes.get(p.template);
    if (size === undefined) {
      p.target = 0;
      void drainPool(s, p, 'warm pool: its template was deleted');
    }
  }
  // The host's own pools fill from the start; a tenant's, once it creates (take).
  for (const [template, size] of sizes) if (size > 0) poolOf(s, template, HOST_TENANT);
  for (const p of s.pools.values()) {
    const size = sizes.get(p.template);
    if (size === undefined) continue;
    p.target = size;
    const recipe = s.deps.recipeOf(p.template);
    const stale = p.ready.filter((e) => e.recipe !== recipe);
    const keep = p.ready.filter((e) => e.recipe === recipe);
    const extra = keep.splice(size);
    p.ready = keep;
    if (stale.length + extra.length > 0) void discard(s, [...stale, ...extra], 'warm pool resized');
    fill(s, p);
  }
}

async function drain(s: PoolState, filter: { template: string } | { image: string }): Promise<void> {
  const out: Promise<void>[] = [];
  for (const p of s.pools.values()) {
    if ('template' in filter ? p.template === filter.template : p.ready.some((e) => e.image === filter.image))
      out.push(drainPool(s, p, 'warm pool drained'));
    // A create in flight lands after the drain: wait for it, it is killed on arrival.
    if (p.filling) out.push(p.filling);
  }
  await Promise.all(out);
}

async function reclaim(s: PoolState): Promise<number> {
  const left = s.deps.store.listSandboxes({
    tenant: POOL_TENANT,
    states: ['creating', 'running', 'paused'],
  });
  await discard(
    s,
    left.map((r) => ({ id: r.id, recipe: '', image: r.image })),
    'warm pool: left by a previous daemon',
  );
  return left.length;
}

function stats(s: PoolState): PoolStats[] {
  const by = new Map<string, PoolStats>();
  for (const p of s.pools.values()) {
    const t = by.get(p.template) ?? { template: p.template, size: 0, target: 0, hits: 0, misses: 0 };
    t.size += p.ready.length;
    t.target += p.target;
    t.hits += p.hits;
    t.misses += p.misses;
    by.set(p.template, t);
  }
  return [...by.values()];
}

async function close(s: PoolState): Promise<void> {
  s.closed = true;
  const waits: Promise<void>[] = [];
  for (const p of s.pools.values()) {
    if (p.retry) clearTimeout(p.retry);
    if (p.idle) clearTimeout(p.idle);
    p.retry = null;
    p.idle = null;
    if (p.filling) waits.push(p.filling);
  }
  await Promise.all(waits);
  await Promise.all([...s.pools.values()].map((p) => drainPool(s, p, 'daemon stopping')));
}

export function createWarmPool(deps: WarmPoolDeps): WarmPool {
  const s: PoolState = { deps, pools: new Map(), sizes: new Map(), closed: false };
  return {
    take: (want, opts) => take(s, want, opts),
    sync: () => sync(s),
    drain: (filter) => drain(s, filter),
    reclaim: () => reclaim(s),
    stats: () => stats(s),
    close: () => close(s),
  };
}
