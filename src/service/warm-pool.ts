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

export function createWarmPool(deps: WarmPoolDeps): WarmPool {
  const { store, log } = deps;
  const pools = new Map<string, TemplatePool>();
  /** Each template's size, as last synced. */
  const sizes = new Map<string, number>();
  let closed = false;
  const keyOf = (template: string, tenant: string) => `${template}\u0000${tenant}`;

  function poolOf(template: string, tenant: string): TemplatePool {
    let p = pools.get(keyOf(template, tenant));
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
      pools.set(keyOf(template, tenant), p);
    }
    return p;
  }

  /** A tenant's pool stays while it is used: its idle timer starts again at each take. */
  function touch(p: TemplatePool): void {
    if (p.tenant === HOST_TENANT) return;
    if (p.idle) clearTimeout(p.idle);
    p.idle = setTimeout(() => {
      p.idle = null;
      p.target = 0;
      pools.delete(keyOf(p.template, p.tenant));
      void drainPool(p, 'warm pool: unused by its tenant');
    }, POOL.tenantIdleMs);
    p.idle.unref();
  }

  function discard(entries: Entry[], reason: string): Promise<void> {
    return Promise.all(
      entries.map(async (e) => {
        const rec = store.getSandbox(e.id);
        if (!rec || rec.tenant !== POOL_TENANT || !isLive(rec.state)) return;
        await deps.kill(rec, reason).catch((err: unknown) => {
          log.warn({ sandbox: e.id, err: String(err) }, 'could not kill a pooled sandbox');
        });
      }),
    ).then(() => undefined);
  }

  async function fillLoop(p: TemplatePool): Promise<void> {
    const { template } = p;
    while (!closed && p.ready.length < p.target) {
      const wait = p.lastStart + POOL.refillGapMs - Date.now();
      if (wait > 0) await sleep(wait);
      if (closed) return;
      const recipe = deps.recipeOf(template);
      if (recipe === null) return;
      p.lastStart = Date.now();
      const gen = p.generation;
      let rec: SandboxRecord;
      try {
        rec = await deps.make(template, p.tenant);
      } catch (e) {
        p.backoffMs = Math.min(Math.max(p.backoffMs * 2, POOL.backoffMs), POOL.maxBackoffMs);
        log.warn({ template, err: String(e), retryMs: p.backoffMs }, 'warm pool: a refill create failed');
        if (!closed && !p.retry) {
          p.retry = setTimeout(() => {
            p.retry = null;
            fill(p);
          }, p.backoffMs);
          p.retry.unref();
        }
        return;
      }
      p.backoffMs = 0;
      // What a first exec would wait for is done now, off the path of the create that takes it.
      await deps.prepare(rec).catch((e: unknown) => {
        log.warn({ sandbox: rec.id, err: String(e) }, 'warm pool: could not prepare execs');
      });
      if (closed || gen !== p.generation || deps.recipeOf(template) !== recipe) {
        await discard([{ id: rec.id, recipe, image: rec.image }], 'warm pool drained');
        continue;
      }
      p.ready.push({ id: rec.id, recipe, image: rec.image });
    }
  }

  function fill(p: TemplatePool): void {
    if (closed || p.filling || p.retry || p.ready.length >= p.target) return;
    p.filling = fillLoop(p)
      .catch((e: unknown) => log.warn({ template: p.template, err: String(e) }, 'warm pool: refill stopped'))
      .finally(() => {
        p.filling = null;
      });
  }

  function drainPool(p: TemplatePool, reason: string): Promise<void> {
    p.generation += 1;
    return discard(p.ready.splice(0), reason);
  }

  return {
    take(want, opts) {
      const template = want.labels[TEMPLATE_LABEL] ?? DEFAULT_TEMPLATE;
      const size = sizes.get(template) ?? 0;
      if (closed || size === 0) return undefined;
      // A tenant's first create of a template starts its pool of it (this create is a miss).
      const p = poolOf(template, want.tenant);
      p.target = size;
      touch(p);
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
        const rec = store.getSandbox(entry.id);
        if (rec && !isDeepStrictEqual(rec.limits, want.limits)) break;
        p.ready.shift();
        if (rec?.state !== 'running' || rec.tenant !== POOL_TENANT) continue;
        if (entry.recipe !== recipe) {
          void discard([entry], 'warm pool: its template changed');
          continue;
        }
        // Read and update with no await between: exactly one create takes it.
        const taken = store.updateSandbox(rec.id, {
          tenant: want.tenant,
          session: want.session,
          labels: want.labels,
          expiresAt: want.expiresAt,
          createdAt: want.createdAt,
          updatedAt: want.updatedAt,
        });
        p.hits += 1;
        fill(p);
        return taken;
      }
      p.misses += 1;
      fill(p);
      return undefined;
    },

    sync() {
      if (closed) return;
      sizes.clear();
      for (const t of deps.targets()) sizes.set(t.template, t.size);
      for (const p of pools.values()) {
        const size = sizes.get(p.template);
        if (size === undefined) {
          p.target = 0;
          void drainPool(p, 'warm pool: its template was deleted');
        }
      }
      // The host's own pools fill from the start; a tenant's, once it creates (take).
      for (const [template, size] of sizes) if (size > 0) poolOf(template, HOST_TENANT);
      for (const p of pools.values()) {
        const size = sizes.get(p.template);
        if (size === undefined) continue;
        p.target = size;
        const recipe = deps.recipeOf(p.template);
        const stale = p.ready.filter((e) => e.recipe !== recipe);
        const keep = p.ready.filter((e) => e.recipe === recipe);
        const extra = keep.splice(size);
        p.ready = keep;
        if (stale.length + extra.length > 0) void discard([...stale, ...extra], 'warm pool resized');
        fill(p);
      }
    },

    async drain(filter) {
      const out: Promise<void>[] = [];
      for (const p of pools.values()) {
        if (
          'template' in filter
            ? p.template === filter.template
            : p.ready.some((e) => e.image === filter.image)
        )
          out.push(drainPool(p, 'warm pool drained'));
        // A create in flight lands after the drain: wait for it, it is killed on arrival.
        if (p.filling) out.push(p.filling);
      }
      await Promise.all(out);
    },

    async reclaim() {
      const left = store.listSandboxes({
        tenant: POOL_TENANT,
        states: ['creating', 'running', 'paused'],
      });
      await discard(
        left.map((r) => ({ id: r.id, recipe: '', image: r.image })),
        'warm pool: left by a previous daemon',
      );
      return left.length;
    },

    stats() {
      const by = new Map<string, PoolStats>();
      for (const p of pools.values()) {
        const s = by.get(p.template) ?? { template: p.template, size: 0, target: 0, hits: 0, misses: 0 };
        s.size += p.ready.length;
        s.target += p.target;
        s.hits += p.hits;
        s.misses += p.misses;
        by.set(p.template, s);
      }
      return [...by.values()];
    },

    async close() {
      closed = true;
      const waits: Promise<void>[] = [];
      for (const p of pools.values()) {
        if (p.retry) clearTimeout(p.retry);
        if (p.idle) clearTimeout(p.idle);
        p.retry = null;
        p.idle = null;
        if (p.filling) waits.push(p.filling);
      }
      await Promise.all(waits);
      await Promise.all([...pools.values()].map((p) => drainPool(p, 'daemon stopping')));
    },
  };
}
