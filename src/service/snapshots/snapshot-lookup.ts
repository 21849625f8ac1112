/** Finding snapshots and what hangs on them: the hidden holder sandbox, live dependents, the API view. */
import { ForkboxError } from '../../domain/errors.ts';
import type { SandboxRecord, SnapshotRecord } from '../../domain/types.ts';
import type { SnapshotInfo } from '../api.ts';
import { type CallerContext, mayUseNamespace } from '../caller.ts';
import type { Store } from '../ports.ts';

/** Who looks a snapshot up: its tenant, and the namespaces its token may use. */
export type SnapshotCaller = Pick<CallerContext, 'tenant' | 'namespaces'>;

export interface SnapshotLookup {
  /**
   * By id or name, among the caller's: its tenant's, in a namespace the caller may use; not_found
   * otherwise (another tenant's or namespace's snapshot is not said to exist).
   */
  find(ctx: SnapshotCaller, idOrName: string): SnapshotRecord;
  /** The caller's snapshots, oldest first. */
  list(ctx: SnapshotCaller): SnapshotRecord[];
  /** The paused (or, mid-restore, running) sandbox holding the snapshot's live REPL copy, if any. */
  holder(snap: SnapshotRecord): SandboxRecord | undefined;
  /** Live sandboxes stacked on the snapshot's files (other than its holder). */
  dependents(snap: SnapshotRecord): SandboxRecord[];
  info(snap: SnapshotRecord): SnapshotInfo;
}

export function createSnapshotLookup(store: Store): SnapshotLookup {
  const visible = (ctx: SnapshotCaller, r: SnapshotRecord | undefined) =>
    r !== undefined && r.tenant === ctx.tenant && mayUseNamespace(ctx, r.namespace);
  function find(ctx: SnapshotCaller, idOrName: string): SnapshotRecord {
    const byId = store.getSnapshot(idOrName);
    const rec = visible(ctx, byId) ? byId : store.getSnapshotByName(idOrName, ctx.tenant);
    if (!rec || !visible(ctx, rec)) {
      throw new ForkboxError(
        'not_found',
        `no snapshot '${idOrName}'. List snapshots with 'forkbox snapshot ls'.`,
        {
          snapshot: idOrName,
        },
      );
    }
    return rec;
  }

  function holder(snap: SnapshotRecord): SandboxRecord | undefined {
    const h = snap.holderId ? store.getSandbox(snap.holderId) : undefined;
    return h && (h.state === 'paused' || h.state === 'running') ? h : undefined;
  }

  /** Live sandboxes stacked on the snapshot's files (other than its holder). */
  function dependents(snap: SnapshotRecord): SandboxRecord[] {
    const top = snap.layers[0];
    return store
      .listSandboxes({ states: ['creating', 'running', 'paused'] })
      .filter(
        (r) =>
          r.id !== snap.holderId &&
          Array.isArray(r.runtime.lowers) &&
          (r.runtime.lowers as string[]).includes(top ?? ''),
      );
  }

  function snapInfo(snap: SnapshotRecord): SnapshotInfo {
    return {
      id: snap.id,
      name: snap.name,
      source: snap.sourceId,
      image: snap.image,
      createdAt: new Date(snap.createdAt).toISOString(),
      pythonState: holder(snap) !== undefined,
      ...liveStateLost(snap),
      layers: snap.layers.length,
      dependents: dependents(snap).map((r) => r.id),
    };
  }

  /** Why a snapshot that held a live REPL copy no longer does: its holder's end. */
  function liveStateLost(snap: SnapshotRecord): { pythonStateLost?: string } {
    if (!snap.holderId || holder(snap)) return {};
    const h = store.getSandbox(snap.holderId);
    const why = h?.endReason ?? 'its holder sandbox is gone';
    return { pythonStateLost: `the live Python state is gone (${why}): restores bring back its files only` };
  }

  const list = (ctx: SnapshotCaller) =>
    store.listSnapshots(ctx.tenant).filter((r) => mayUseNamespace(ctx, r.namespace));
  return { find, list, holder, dependents, info: snapInfo };
}
