/**
 * A sandbox that ends on its own — its PID 1 died (OOM, killed, crashed) or its agent stopped answering —
 * is reported by the runtime (RuntimeEvents.onSandboxExited). It becomes `failed` with the reason (seen
 * by `ls`, `sandbox_get` and REST alike), its execs are ended, the runtime releases what it held, and an
 * ancestor kept as a tombstone only for it is released in turn.
 */
import type { Logger } from '../../domain/logger.ts';
import { runtimeId } from '../../domain/runtime-id.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { Runtime, Store } from '../ports.ts';

export interface ExitDeps {
  store: Store;
  runtime: Runtime;
  log: Pick<Logger, 'warn' | 'info'>;
  serial<T>(id: string, fn: () => Promise<T>): Promise<T>;
  abandonExecs(sandboxId: string): void;
  releaseTombstones(parentId: string | null): Promise<void>;
  nsParentOf(rec: SandboxRecord): string | null;
}

/** A sandbox still being made when it ended is looked at again this often, this many times. */
const CREATING_RETRY_MS = 200;
const CREATING_RETRIES = 50;

export function createExitHandler(deps: ExitDeps) {
  const { store, runtime, log } = deps;

  const find = (rid: string) =>
    store.listSandboxes({ states: ['creating', 'running', 'paused'] }).find((r) => runtimeId(r) === rid);

  async function fail(rec: SandboxRecord, reason: string): Promise<void> {
    const failed = await deps.serial(rec.id, async () => {
      const cur = store.getSandbox(rec.id);
      if (!cur || (cur.state !== 'running' && cur.state !== 'paused')) return null;
      const rec2 = store.transitionSandbox(cur.id, 'failed', { endReason: reason });
      deps.abandonExecs(cur.id);
      await runtime
        .killSandbox(rec2)
        .catch((e: unknown) =>
          log.warn({ sandbox: cur.id, err: String(e) }, 'releasing a failed sandbox failed'),
        );
      return store.updateSandbox(cur.id, { hostPid: null });
    });
    if (failed) {
      log.info({ sandbox: failed.id, reason }, 'sandbox failed');
      await deps.releaseTombstones(deps.nsParentOf(failed));
    }
  }

  return function onSandboxExited(rid: string, reason: string, attempt = 0): void {
    const rec = find(rid);
    if (!rec) return;
    if (rec.state === 'creating') {
      // Its create or fork is finishing: let it record the sandbox as running first.
      if (attempt < CREATING_RETRIES)
        setTimeout(() => onSandboxExited(rid, reason, attempt + 1), CREATING_RETRY_MS).unref();
      return;
    }
    fail(rec, reason).catch((e: unknown) =>
      log.warn({ sandbox: rec.id, err: String(e) }, 'marking a sandbox failed'),
    );
  };
}
