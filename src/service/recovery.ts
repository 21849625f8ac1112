/**
 * Start-up recovery: sandboxes left half-created or half-killed by a crash are finished off, live ones
 * are re-adopted from the runtime, those whose processes are gone are marked lost and released.
 */
import type { Logger } from '../domain/logger.ts';
import type { SandboxRecord } from '../domain/types.ts';
import type { Runtime, Store } from './ports.ts';

export interface RecoveryDeps {
  store: Store;
  runtime: Runtime;
  log: Pick<Logger, 'info' | 'warn'>;
  kill(rec: SandboxRecord, reason: string): Promise<unknown>;
  /** Execs of re-adopted running sandboxes: real results of those that ended meanwhile, the rest killed. */
  recoverExecs?(sandboxes: SandboxRecord[]): Promise<{ reported: number; interrupted: number }>;
}

export async function recoverSandboxes(
  deps: RecoveryDeps,
  deadlineMs: number,
): Promise<{ adopted: number; lost: string[] }> {
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
  const { lost } = await runtime.recover(adoptable, store.listTemplates(), deadlineMs);
  for (const id of lost) {
    store.transitionSandbox(id, 'lost', {
      endReason: 'its processes were gone after a daemon restart or reboot',
    });
    const rec = store.getSandbox(id);
    if (rec) await deps.kill(rec, 'lost').catch(() => undefined);
  }
  if (deps.recoverExecs) {
    const running = store.listSandboxes({ states: ['running'] }).filter((r) => !lost.includes(r.id));
    const r = await deps.recoverExecs(running);
    if (r.reported + r.interrupted > 0)
      log.info(r, 'execs in flight during the restart: results recovered or ended');
  }
  // What is left (sandboxes lost, or paused: their agents cannot answer) is marked interrupted.
  const interrupted = store.markRunningExecs('interrupted');
  if (interrupted > 0)
    log.info({ interrupted }, 'execs in flight during the restart were marked interrupted');
  return { adopted: adoptable.length - lost.length, lost };
}
