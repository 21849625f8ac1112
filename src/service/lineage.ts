/**
 * Lineage: how sandboxes relate through forks. Killing (with tombstones for parents whose pid
 * namespace still holds descendants, and cascades), forking a running sandbox into children, and
 * merging a winning fork into its ancestor (docs/ARCHITECTURE.md, "Fork", "Runtime ids" and "Tombstones").
 */
import { randomBytes } from 'node:crypto';
import { errors, ForkboxError } from '../domain/errors.ts';
import type { Logger } from '../domain/logger.ts';
import { runtimeId } from '../domain/runtime-id.ts';
import { isLive } from '../domain/sandbox-state.ts';
import type { SandboxRecord } from '../domain/types.ts';
import type { ForkChildResult, ForkRequest, ForkResult, MergeResult, SandboxInfo } from './api.ts';
import type { DiskPolicy } from './disk-limits.ts';
import type { Runtime, Store } from './ports.ts';
import { info } from './sandbox-info.ts';
import { checkEnv, checkForkCount, checkLabels, checkName, checkTtl, limitsFrom } from './validate.ts';

/** Label on the hidden record that keeps a merged parent's old processes until they end. */
export const MERGED_LABEL = 'forkbox.merged-into';
/**
 * Labels that name one sandbox's role rather than describe its contents, so a fork (or a snapshot,
 * and the sandboxes restored from it) never inherits them: the MCP default-sandbox marker and its
 * owner key (protocol/mcp/default-sandbox.ts: a child carrying them would be adopted as a client's
 * default sandbox after a restart), and a merge's hidden record. Given explicitly, they still apply.
 */
export const ROLE_LABEL_PREFIXES: readonly string[] = ['forkbox.mcp-default', MERGED_LABEL];
const isRoleLabel = (k: string) => ROLE_LABEL_PREFIXES.some((p) => k === p || k.startsWith(`${p}-`));

export interface CallerRef {
  tenant: string;
  session?: string;
}

export interface LineageDeps {
  store: Store;
  runtime: Runtime;
  log: Pick<Logger, 'error'>;
  now: () => number;
  /** Per-sandbox serialisation of lifecycle operations (the engine's). */
  serial<T>(id: string, fn: () => Promise<T>): Promise<T>;
  abandonExecs(sandboxId: string): void;
  withKids(rec: SandboxRecord): SandboxInfo;
  disk?: DiskPolicy;
}

export function createLineage(deps: LineageDeps) {
  const { store, runtime, log, now, serial, withKids } = deps;
  type CallerContext = CallerRef;

  /** The sandbox whose PID 1 holds this one's pid namespace (its parent, unless a merge moved it). */
  const nsParentOf = (r: SandboxRecord): string | null =>
    typeof r.runtime.nsParent === 'string' ? r.runtime.nsParent : r.parentId;
  /** A sandbox whose PID 1 still holds a pid namespace: live, or a tombstone waiting for descendants. */
  const holds = (r: SandboxRecord) => isLive(r.state) || r.runtime.tombstone === true;
  const childrenHolding = (id: string) =>
    store.listPidNamespaceHolders().filter((r) => nsParentOf(r) === id && holds(r));

  async function kill(rec: SandboxRecord, reason: string): Promise<SandboxRecord> {
    const done = await serial(rec.id, async () => {
      const cur = store.getSandbox(rec.id) ?? rec;
      if (!isLive(cur.state) && cur.state !== 'lost') return cur;
      if (cur.state !== 'killing') store.transitionSandbox(cur.id, 'killing');
      deps.abandonExecs(cur.id);
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
      .listPidNamespaceHolders()
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
    const n = checkForkCount(req.n);
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
    // Children keep the source's disk limit unless given one (any value up to the daemon's maximum:
    // a child's limit covers its own writes only). A source made before disk limits gets the default.
    const inherit = (v: number, scale = 1) => (v > 0 ? Math.ceil(v / scale) : undefined);
    const limits = limitsFrom(
      {
        memoryMb: req.memoryMb ?? source.limits.memoryBytes / 2 ** 20,
        cpus: req.cpus ?? source.limits.cpus,
        pids: req.pids ?? source.limits.pids,
        diskMb: req.diskMb ?? inherit(source.limits.diskBytes, 2 ** 20),
        diskInodes: req.diskInodes ?? inherit(source.limits.diskInodes),
      },
      deps.disk,
    );
    const ttl = checkTtl(req.ttlSeconds);
    const env = { ...source.env, ...checkEnv(req.env) };
    const extraLabels = checkLabels(req.labels);
    const t = now();
    const children: SandboxRecord[] = [];
    // One transaction for all n records (and one for their outcomes below), not one per child.
    store.atomically(() => {
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
            Object.entries({
              ...Object.fromEntries(Object.entries(source.labels).filter(([k]) => !isRoleLabel(k))),
              ...extraLabels,
            }).filter(([k]) => !opts.dropLabels?.includes(k)),
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
    });
    let outcome: Awaited<ReturnType<Runtime['forkSandbox']>>;
    try {
      outcome = await runtime.forkSandbox(
        source,
        children.map((c, i) => ({
          id: c.id,
          name: c.name,
          env: c.env,
          limits: c.limits,
          forkIndex: i,
          // Inherited: a fork never widens (or narrows) its source's network policy.
          network: source.network,
        })),
        { wait: req.wait !== false },
      );
    } catch (e) {
      store.atomically(() => {
        for (const c of children)
          store.transitionSandbox(c.id, 'failed', { endReason: e instanceof Error ? e.message : String(e) });
      });
      throw e;
    }
    const results: ForkChildResult[] = store.atomically(() =>
      outcome.children.map((o) => {
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
      }),
    );
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
          runtime: { ...parent.runtime, rid: runtimeId(parent) },
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
          runtime: { ...winnerNow.runtime, rid: runtimeId(winnerNow) },
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
        .find((r) => r.labels[MERGED_LABEL] === parent.id && runtimeId(r) === runtimeId(parent));
      if (old) await kill(old, `replaced by its fork ${winner.id} (merge)`);
      return { sandbox: withKids(store.getSandbox(merged.id) as SandboxRecord), winner: winner.id };
    });
  }

  return { nsParentOf, childrenHolding, releaseTombstones, kill, killTree, fork, merge };
}
