/**
 * Snapshots: a named frozen state of a sandbox. Taking one forks the sandbox into a hidden child and
 * pauses it: the child's lower layers are the frozen files, and its paused REPL worker is a live copy
 * of the Python state. Restoring forks that hidden child again (files + Python state), or — once it is
 * gone (host reboot) — creates sandboxes on the frozen layers alone (`python_state: false`).
 */
import { randomBytes } from 'node:crypto';
import { ForkboxError } from '../domain/errors.ts';
import { formatNetwork, NETWORK_NONE, type NetworkPolicy } from '../domain/network.ts';
import { isLive } from '../domain/sandbox-state.ts';
import type { Limits, SandboxRecord, SnapshotRecord } from '../domain/types.ts';
import type { CreateSandboxRequest, ForkRequest, ForkResult, SnapshotInfo } from './api.ts';
import type { Runtime, Store } from './ports.ts';
import { info as sandboxInfo } from './sandbox-info.ts';
import { checkForkCount, checkName } from './validate.ts';

/** A restore's disk limit: given, else the snapshot's (a snapshot from before disk limits: the default). */
function diskOf(req: ForkRequest, limits: Limits): Pick<CreateSandboxRequest, 'diskMb' | 'diskInodes'> {
  const mb = req.diskMb ?? (limits.diskBytes > 0 ? Math.ceil(limits.diskBytes / 2 ** 20) : undefined);
  const inodes = req.diskInodes ?? (limits.diskInodes > 0 ? limits.diskInodes : undefined);
  return {
    ...(mb === undefined ? {} : { diskMb: mb }),
    ...(inodes === undefined ? {} : { diskInodes: inodes }),
  };
}

/** Label on a snapshot's hidden holder sandbox; such sandboxes are left out of listings. */
export const SNAPSHOT_LABEL = 'forkbox.snapshot';

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

export function createSnapshots(deps: SnapshotDeps) {
  const { store, runtime, now } = deps;

  /** A snapshot's network policy: its holder's (a fork of the source); none once that record is gone. */
  function snapNetwork(snap: SnapshotRecord): NetworkPolicy {
    return (snap.holderId ? store.getSandbox(snap.holderId)?.network : undefined) ?? NETWORK_NONE;
  }

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
        sourceId: source.id,
        image: source.image,
        templateId: h.templateId,
        layers: Array.isArray(h.runtime.lowers) ? (h.runtime.lowers as string[]) : [],
        holderId: hid,
        limits: source.limits,
        env: source.env,
        createdAt: now(),
      };
      store.insertSnapshot(rec);
      return snapInfo(rec);
    },

    list: (tenant: string) => store.listSnapshots(tenant).map(snapInfo),
    get: (tenant: string, idOrName: string) => snapInfo(find(tenant, idOrName)),

    async remove(
      tenant: string,
      idOrName: string,
      cascade: boolean,
    ): Promise<{ deleted: string; killed: string[] }> {
      const snap = find(tenant, idOrName);
      const deps2 = dependents(snap);
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

    async restore(
      ctx: { tenant: string; session?: string },
      idOrName: string,
      req: ForkRequest,
    ): Promise<ForkResult> {
      const snap = find(ctx.tenant, idOrName);
      const h = holder(snap);
      if (h) {
        // Thaw the holder just long enough to fork it; it holds the REPL copy for the next restore.
        return deps.serial(`restore:${h.id}`, async () => {
          await deps.serial(h.id, async () => {
            const cur = store.getSandbox(h.id);
            if (cur?.state === 'paused') {
              await runtime.resumeSandbox(cur);
              store.transitionSandbox(h.id, 'running');
            }
          });
          try {
            return await deps.fork(ctx, store.getSandbox(h.id) as SandboxRecord, req, {
              session: ctx.session ?? null,
              dropLabels: [SNAPSHOT_LABEL],
            });
          } finally {
            await deps.serial(h.id, async () => {
              const cur = store.getSandbox(h.id);
              if (cur?.state === 'running') {
                await runtime.pauseSandbox(cur);
                store.transitionSandbox(h.id, 'paused');
              }
            });
          }
        });
      }
      // The live copy is gone: new sandboxes on the frozen files only.
      const n = checkForkCount(req.n);
      const started = now();
      const children: ForkResult['children'] = [];
      for (let i = 0; i < n; i++) {
        const name = req.names?.[i];
        const creq: CreateSandboxRequest = {
          image: snap.image,
          memoryMb: req.memoryMb ?? snap.limits.memoryBytes / 2 ** 20,
          cpus: req.cpus ?? snap.limits.cpus,
          pids: req.pids ?? snap.limits.pids,
          ...diskOf(req, snap.limits),
          env: { ...snap.env, ...(req.env ?? {}) },
          network: formatNetwork(snapNetwork(snap)),
          ...(name === undefined ? {} : { name }),
          ...(req.ttlSeconds === undefined ? {} : { ttlSeconds: req.ttlSeconds }),
          ...(req.labels === undefined ? {} : { labels: req.labels }),
        };
        try {
          const rec = await deps.create(ctx, creq, snap.layers);
          children.push({ ok: true, sandbox: sandboxInfo(rec) });
        } catch (e) {
          const err = e instanceof ForkboxError ? e : new ForkboxError('internal', String(e));
          children.push({ ok: false, error: { code: err.code, message: err.message } });
        }
      }
      return {
        source: snap.id,
        pauseMs: 0,
        snapshotMs: 0,
        driver: 'none',
        durationMs: now() - started,
        carried: { filesystem: true, pythonState: false, environment: true },
        notCarried: [
          'Python state: the snapshot no longer holds a live copy of the REPL (the host restarted since it was taken)',
        ],
        children,
      };
    },
  };
}

export type Snapshots = ReturnType<typeof createSnapshots>;
