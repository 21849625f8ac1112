/** Finding snapshots and what hangs on them: the hidden holder sandbox, live dependents, the API view. */
import { ForkboxError } from '../domain/errors.ts';
import type { SandboxRecord, SnapshotRecord } from '../domain/types.ts';
import type { SnapshotInfo } from './api.ts';
import type { Store } from './ports.ts';

export interface SnapshotLookup {
  /** By id or name, within the tenant; not_found otherwise. */
  find(tenant: string, idOrName: string): SnapshotRecord;
  /** The paused (or, mid-restore, running) sandbox holding the snapshot's live REPL copy, if any. */
  holder(snap: SnapshotRecord): SandboxRecord | undefined;
  /** Live sandboxes stacked on the snapshot's files (other than its holder). */
  dependents(snap: SnapshotRecord): SandboxRecord[];
  info(snap: SnapshotRecord): SnapshotInfo;
}

export function createSnapshotLookup(store: Store): SnapshotLookup {
  function find(tenant: string, idOrName: string): SnapshotRecord {
    const byId = store.getSnapshot(idOrName);
    const rec = byId && byId.tenant === tenant ? byId : store.getSnapshotByName(idOrName, tenant);
    if (!rec) {
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
      layers: snap.layers.length,
      dependents: dependents(snap).map((r) => r.id),
    };
  }

  return { find, holder, dependents, info: snapInfo };
}
