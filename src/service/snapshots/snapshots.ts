/**
 * Snapshots: a named frozen state of a sandbox. Taking one forks the sandbox into a hidden child and
 * pauses it: the child's lower layers are the frozen files, and its paused REPL worker is a live copy
 * of the Python state. Restoring forks that hidden child again (files + Python state), or — once it is
 * gone (host reboot) — creates sandboxes on the frozen layers alone (`python_state: false`):
 * snapshot-restore.ts. Lookups are snapshot-lookup.ts.
 */
import { randomBytes } from 'node:crypto';
import { ForkboxError } from '../../domain/errors.ts';
import { isLive } from '../../domain/sandbox-state.ts';
import type { SandboxRecord, SnapshotRecord } from '../../domain/types.ts';
import type { CreateSandboxRequest, ForkRequest, ForkResult, SnapshotInfo } from '../api.ts';
import { mayUseNamespace } from '../caller.ts';
import type { Runtime, Store } from '../ports.ts';
import { checkName } from '../validate.ts';
import { createSnapshotLookup, type SnapshotCaller } from './snapshot-lookup.ts';
import { createSnapshotRestore, SNAPSHOT_LABEL } from './snapshot-restore.ts';

export { SNAPSHOT_LABEL } from './snapshot-restore.ts';

export interface SnapshotDeps {
  store: Store;
  runtime: Runtime;
  now: () => number;
  serial<T>(id: string, fn: () => Promise<T>): Promise<T>;
  fork(
    ctx: { tenant: string; session?: string },
    source: SandboxRecord,
    req: ForkRequest,
    opts?: { session?: string | null; dropLabels?: string[] },
  ): Promise<ForkResult>;
  create(
    ctx: { tenant: string; session?: string },
    req: CreateSandboxRequest,
    lowers?: string[],
  ): Promise<SandboxRecord>;
  kill(rec: SandboxRecord, reason: string): Promise<SandboxRecord>;
  killTree(rec: SandboxRecord, reason: string): Promise<SandboxRecord>;
}

export interface Snapshots {
  /** Takes a snapshot of `source`: forks it into a hidden holder, paused, and records the snapshot. */
  create(
    ctx: { tenant: string; session?: string },
    source: SandboxRecord,
    name?: string,
  ): Promise<SnapshotInfo>;
  /** The caller's snapshots, oldest first. */
  list(ctx: SnapshotCaller): SnapshotInfo[];
  /** The caller's snapshot by id or name (not_found otherwise). */
  get(ctx: SnapshotCaller, idOrName: string): SnapshotInfo;
  /** Deletes a snapshot and kills its holder; its live dependents block it, or are killed too (`cascade`). */
  remove(
    ctx: SnapshotCaller,
    idOrName: string,
    cascade: boolean,
  ): Promise<{ deleted: string; killed: string[] }>;
  /** Forks the snapshot's holder into new sandboxes, or, once it is gone, creates them on its files alone. */
  restore(
    ctx: SnapshotCaller & { session?: string },
    idOrName: string,
    req: ForkRequest,
  ): Promise<ForkResult>;
  /** The ports a snapshot's source had published when it was taken (restores publish them again). */
  portsOf(ctx: SnapshotCaller, idOrName: string): number[];
  /** The caller's snapshot record (not_found otherwise). */
  find(ctx: SnapshotCaller, idOrName: string): SnapshotRecord;
}

export function createSnapshots(deps: SnapshotDeps): Snapshots {
  const { store, runtime, now } = deps;
  const lookup = createSnapshotLookup(store);
  const { find, list, holder, dependents, info: snapInfo } = lookup;

  return {
    async create(
      ctx: { tenant: string; session?: string },
      source: SandboxRecord,
      name?: string,
    ): Promise<SnapshotInfo> {
      const id = `sn-${randomBytes(5).toString('hex')}`;
      const snapName = name === undefined ? id : checkName(name);
      if (store.getSnapshotByName(snapName, ctx.tenant)) {
        throw new ForkboxError(
          'already_exists',
          `a snapshot is already named '${snapName}'. Pick another name or delete it.`,
          {
            name: snapName,
          },
        );
      }
      const r = await deps.fork(ctx, source, { n: 1, labels: { [SNAPSHOT_LABEL]: id } }, { session: null });
      const child = r.children[0];
      if (!child?.ok || !child.sandbox) {
        throw new ForkboxError(
          'internal',
          `taking the snapshot failed: ${child?.error?.message ?? 'no result'}`,
        );
      }
      const hid = child.sandbox.id;
      // The holder is not the caller's: no session, no TTL, paused until a restore needs it.
      store.updateSandbox(hid, { session: null, expiresAt: null });
      await deps.serial(hid, async () => {
        const h = store.getSandbox(hid);
        if (!h) throw new ForkboxError('internal', 'the snapshot holder vanished');
        await runtime.pauseSandbox(h);
        store.transitionSandbox(hid, 'paused');
      });
      const h = store.getSandbox(hid) as SandboxRecord;
      const rec: SnapshotRecord = {
        id,
        name: snapName,
        tenant: ctx.tenant,
        namespace: source.namespace,
        sourceId: source.id,
        image: source.image,
        templateId: h.templateId,
        layers: Array.isArray(h.runtime.lowers) ? (h.runtime.lowers as string[]) : [],
        holderId: hid,
        limits: source.limits,
        env: source.env,
        ports: (source.ports ?? []).map((p) => p.port),
        createdAt: now(),
      };
      store.insertSnapshot(rec);
      return { ...snapInfo(rec), pauseMs: r.pauseMs };
    },

    list: (ctx: SnapshotCaller) => list(ctx).map(snapInfo),
    get: (ctx: SnapshotCaller, idOrName: string) => snapInfo(find(ctx, idOrName)),

    async remove(
      ctx: SnapshotCaller,
      idOrName: string,
      cascade: boolean,
    ): Promise<{ deleted: string; killed: string[] }> {
      const snap = find(ctx, idOrName);
      const deps2 = dependents(snap);
      const beyond = deps2.filter((r) => !mayUseNamespace(ctx, r.namespace)).length;
      if (beyond > 0) {
        // A restore by a wider token may have put sandboxes on it in namespaces this caller cannot use:
        // it may not kill them (cascade) nor pull their files from under them.
        throw new ForkboxError(
          'conflict',
          `snapshot '${snap.name}' is used by ${beyond} live sandbox(es) in namespaces your token may not use. Delete it with a token of those namespaces, or once they end.`,
          { snapshot: snap.id },
        );
      }
      if (deps2.length > 0 && !cascade) {
        throw new ForkboxError(
          'conflict',
          `snapshot '${snap.name}' is used by ${deps2.length} live sandbox(es): ${deps2
            .slice(0, 5)
            .map((r) => r.id)
            .join(
              ', ',
            )}${deps2.length > 5 ? ', …' : ''}. Kill them first, or delete with cascade to kill them too.`,
          { snapshot: snap.id, dependents: deps2.map((r) => r.id) },
        );
      }
      const killed: string[] = [];
      for (const r of deps2) {
        const cur = store.getSandbox(r.id);
        if (cur && isLive(cur.state)) {
          await deps.killTree(cur, `its snapshot '${snap.name}' was deleted`);
          killed.push(r.id);
        }
      }
      // Unpin the layers first, so killing the holder frees them.
      store.deleteSnapshot(snap.id);
      const h = holder(snap);
      if (h) await deps.killTree(h, `its snapshot '${snap.name}' was deleted`);
      return { deleted: snap.id, killed };
    },

    restore: createSnapshotRestore(deps, lookup),
    portsOf: (ctx: SnapshotCaller, idOrName: string): number[] => find(ctx, idOrName).ports,
    find,
  };
}
