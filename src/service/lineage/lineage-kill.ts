/**
 * Killing sandboxes in a fork tree: a sandbox whose pid namespace still holds descendants keeps its PID 1
 * as a tombstone until the last of them ends; a tree is killed deepest first (docs/ARCHITECTURE.md,
 * "Tombstones").
 */
import type { Logger } from '../../domain/logger.ts';
import { isLive } from '../../domain/sandbox-state.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { Runtime, Store } from '../ports.ts';

export interface KillDeps {
  store: Store;
  runtime: Runtime;
  log: Pick<Logger, 'error'>;
  /** Per-sandbox serialisation of lifecycle operations (the engine's). */
  serial<T>(id: string, fn: () => Promise<T>): Promise<T>;
  abandonExecs(sandboxId: string): void;
}

/** The sandbox whose PID 1 holds this one's pid namespace (its parent, unless a merge moved it). */
export const nsParentOf = (r: SandboxRecord): string | null =>
  typeof r.runtime.nsParent === 'string' ? r.runtime.nsParent : r.parentId;

/** A sandbox whose PID 1 still holds a pid namespace: live, or a tombstone waiting for descendants. */
const holds = (r: SandboxRecord) => isLive(r.state) || r.runtime.tombstone === true;

export interface Killer {
  /** The sandboxes in `id`'s pid namespace that still hold their own (live, or tombstones). */
  childrenHolding(id: string): SandboxRecord[];
  /** Finish off ancestors that were tombstones waiting only for this subtree. */
  releaseTombstones(parentId: string | null): Promise<void>;
  /** Kill a sandbox (its PID 1 stays as a tombstone while descendants need it); its record after. */
  kill(rec: SandboxRecord, reason: string): Promise<SandboxRecord>;
  /** Kill a sandbox and its whole subtree, deepest first. */
  killTree(rec: SandboxRecord, reason: string): Promise<SandboxRecord>;
}

export function createKiller(deps: KillDeps): Killer {
  const { store, runtime, log, serial } = deps;
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

  async function killTree(rec: SandboxRecord, reason: string): Promise<SandboxRecord> {
    const below = store
      .listPidNamespaceHolders()
      .filter((r) => (r.parentId === rec.id || nsParentOf(r) === rec.id) && r.id !== rec.id && holds(r));
    for (const child of below) await killTree(child, `${reason} (cascade from ${rec.id})`);
    return kill(store.getSandbox(rec.id) ?? rec, reason);
  }

  return { childrenHolding, releaseTombstones, kill, killTree };
}
