/**
 * Restoring a snapshot: fork its holder (files and Python state; the holder is thawed only for the fork),
 * or once the holder is gone (host reboot), create sandboxes on the frozen layers alone.
 */
import { ForkboxError } from '../../domain/errors.ts';
import { formatNetwork, NETWORK_NONE, type NetworkPolicy } from '../../domain/network.ts';
import type { RuntimeName } from '../../domain/runtime-id.ts';
import type { Limits, SandboxRecord, SnapshotRecord } from '../../domain/types.ts';
import type { CreateSandboxRequest, ForkRequest, ForkResult } from '../api.ts';
import { defaultRuntime, runtimeOfSandbox } from '../sandboxes/runtime-choice.ts';
import { info as sandboxInfo } from '../sandboxes/sandbox-info.ts';
import { checkForkCount } from '../validate.ts';
import type { SnapshotCaller, SnapshotLookup } from './snapshot-lookup.ts';
import type { SnapshotDeps } from './snapshots.ts';

/** Label on a snapshot's hidden holder sandbox; such sandboxes are left out of listings. */
export const SNAPSHOT_LABEL = 'forkbox.snapshot';

/** A restore's disk limit: given, else the snapshot's (a snapshot from before disk limits: the default). */
function diskOf(req: ForkRequest, limits: Limits): Pick<CreateSandboxRequest, 'diskMb' | 'diskInodes'> {
  const mb = req.diskMb ?? (limits.diskBytes > 0 ? Math.ceil(limits.diskBytes / 2 ** 20) : undefined);
  const inodes = req.diskInodes ?? (limits.diskInodes > 0 ? limits.diskInodes : undefined);
  return {
    ...(mb === undefined ? {} : { diskMb: mb }),
    ...(inodes === undefined ? {} : { diskInodes: inodes }),
  };
}

export function createSnapshotRestore(deps: SnapshotDeps, { find, holder }: SnapshotLookup) {
  /** A snapshot's network policy: its holder's (a fork of the source); none once that record is gone. */
  function snapNetwork(snap: SnapshotRecord): NetworkPolicy {
    return (snap.holderId ? deps.store.getSandbox(snap.holderId)?.network : undefined) ?? NETWORK_NONE;
  }
  /** The runtime its source was made by, when not the default (its holder's, while that record is kept). */
  function snapRuntime(snap: SnapshotRecord): { runtime?: RuntimeName } {
    const rec = snap.holderId ? deps.store.getSandbox(snap.holderId) : undefined;
    const kind = rec ? runtimeOfSandbox(deps.runtime, rec) : undefined;
    return kind === undefined || kind === defaultRuntime(deps.runtime) ? {} : { runtime: kind };
  }

  const { store, runtime, now } = deps;
  return async function restore(
    ctx: SnapshotCaller & { session?: string },
    idOrName: string,
    req: ForkRequest,
  ): Promise<ForkResult> {
    const snap = find(ctx, idOrName);
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
        // Where the holder's forks would be: the snapshot's namespace, which the caller may use (find).
        namespace: snap.namespace,
        memoryMb: req.memoryMb ?? snap.limits.memoryBytes / 2 ** 20,
        cpus: req.cpus ?? snap.limits.cpus,
        pids: req.pids ?? snap.limits.pids,
        ...diskOf(req, snap.limits),
        env: { ...snap.env, ...(req.env ?? {}) },
        network: formatNetwork(snapNetwork(snap)),
        ...snapRuntime(snap),
        ...(name === undefined ? {} : { name }),
        ...(req.ttlSeconds === undefined ? {} : { ttlSeconds: req.ttlSeconds }),
        ...(req.labels === undefined ? {} : { labels: req.labels }),
      };
      try {
        const rec = await deps.create(ctx, creq, snap.layers);
        children.push({ ok: true, sandbox: sandboxInfo(rec, [], runtime) });
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
      carried: { filesystem: true, pythonState: false, processes: false, environment: true },
      notCarried: [
        'Python state: the snapshot no longer holds a live copy of the REPL (the host restarted since it was taken)',
      ],
      children,
    };
  };
}
