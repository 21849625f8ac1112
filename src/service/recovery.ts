/**
 * Start-up recovery: sandboxes left half-created or half-killed by a crash are finished off, live ones
 * are re-adopted from the runtime, those whose processes are gone are started again on their files
 * (revived) or, when they cannot be, marked lost and released.
 */
import type { Logger } from '../domain/logger.ts';
import type { SandboxRecord } from '../domain/types.ts';
import type { Runtime, Store } from './ports.ts';
import { SNAPSHOT_LABEL } from './snapshots/snapshot-restore.ts';
import { POOL_TENANT } from './warm-pool.ts';

export interface RecoveryDeps {
  store: Store;
  runtime: Runtime;
  log: Pick<Logger, 'info' | 'warn'>;
  kill(rec: SandboxRecord, reason: string): Promise<unknown>;
  /** Execs of re-adopted running sandboxes: real results of those that ended meanwhile, the rest killed. */
  recoverExecs?(sandboxes: SandboxRecord[]): Promise<{ reported: number; interrupted: number }>;
  now?: () => number;
}

/**
 * Label on a sandbox started again on its files after its processes were gone (its value: when). Its
 * processes and Python state did not survive; forks do not inherit it (lineage.ts, ROLE_LABEL_PREFIXES).
 */
export const RESTARTED_LABEL = 'forkbox.restarted';

export async function recoverSandboxes(
  deps: RecoveryDeps,
  deadlineMs: number,
): Promise<{ adopted: number; lost: string[]; revived: string[] }> {
  const { store, runtime, log } = deps;
  const half = store.listSandboxes({ states: ['creating', 'killing'] });
  // A sandbox left half-created or half-killed by a crash is finished off, not adopted.
  for (const rec of half) {
    if (rec.state === 'creating') store.transitionSandbox(rec.id, 'killing');
    await runtime
      .killSandbox(store.getSandbox(rec.id) ?? rec)
      .catch((e: unknown) => log.warn({ sandbox: rec.id, err: String(e) }, 'cleanup failed'));
    store.transitionSandbox(rec.id, 'killed', {
      endReason: 'interrupted by a daemon restart',
      hostPid: null,
    });
  }
  const adoptable = store.listSandboxes({ states: ['running', 'paused'] });
  const found = await runtime.recover(adoptable, store.listTemplates(), deadlineMs);
  const revived = await reviveLost(deps, found.lost);
  const lost = found.lost.filter((id) => !revived.includes(id));
  for (const id of lost) {
    store.transitionSandbox(id, 'lost', {
      endReason: 'its processes were gone after a daemon restart or reboot',
    });
    const rec = store.getSandbox(id);
    if (rec) await deps.kill(rec, 'lost').catch(() => undefined);
  }
  if (deps.recoverExecs) {
    // A revived sandbox's execs died with its processes: they are marked interrupted below.
    const running = store.listSandboxes({ states: ['running'] }).filter((r) => !found.lost.includes(r.id));
    const r = await deps.recoverExecs(running);
    if (r.reported + r.interrupted > 0)
      log.info(r, 'execs in flight during the restart: results recovered or ended');
  }
  // What is left (sandboxes lost, or paused: their agents cannot answer) is marked interrupted.
  const interrupted = store.markRunningExecs('interrupted');
  if (interrupted > 0)
    log.info({ interrupted }, 'execs in flight during the restart were marked interrupted');
  return { adopted: adoptable.length - found.lost.length, lost, revived };
}

/**
 * Sandboxes whose processes are gone but whose files are kept (a reboot, a container restart) are
 * started again on their files where the runtime can (Runtime.reviveSandbox), running and labelled with
 * when; not a snapshot's holder (a restore then uses the snapshot's layers alone), a warm pool's
 * sandbox (the pool is refilled) or a killed parent kept for its children. Returns the revived ids.
 */
async function reviveLost(deps: RecoveryDeps, lost: string[]): Promise<string[]> {
  const { store, runtime, log } = deps;
  const revive = runtime.reviveSandbox?.bind(runtime);
  const revived: string[] = [];
  if (!revive) return revived;
  // Twice: a first failure may be the moment (a template still starting, a machine busy booting).
  const failed: string[] = [];
  for (const pass of [lost, failed]) for (const id of [...pass]) await one(id, pass === lost);
  if (revived.length > 0)
    log.info({ revived: revived.length }, 'sandboxes whose processes were gone started again on their files');
  return revived;

  async function one(id: string, first: boolean): Promise<void> {
    const rec = store.getSandbox(id);
    if (!rec || !revivable(rec)) return;
    if (!revive) return;
    try {
      const h = await revive(rec);
      const templateId = typeof h.runtime.templateId === 'string' ? h.runtime.templateId : rec.templateId;
      // Its PID 1 is now a child of the template's, not of its parent's: killing the parent waits for nothing.
      store.updateSandbox(id, {
        hostPid: h.hostPid,
        templateId,
        runtime: { ...h.runtime, nsParent: templateId },
        labels: { ...rec.labels, [RESTARTED_LABEL]: new Date(deps.now?.() ?? Date.now()).toISOString() },
      });
      if (rec.state === 'paused') store.transitionSandbox(id, 'running');
      revived.push(id);
    } catch (e) {
      if (first) failed.push(id);
      log.warn(
        { sandbox: id, err: String(e) },
        first
          ? 'could not start a sandbox again on its files: trying once more'
          : 'could not start a sandbox again on its files: it is lost',
      );
    }
  }
}

function revivable(rec: SandboxRecord): boolean {
  return (
    (rec.state === 'running' || rec.state === 'paused') &&
    rec.labels[SNAPSHOT_LABEL] === undefined &&
    rec.tenant !== POOL_TENANT &&
    rec.runtime.tombstone !== true
  );
}
