/**
 * Execs after a daemon restart. For every re-adopted running sandbox with execs recorded as running: the
 * agent is asked for the results of those that ended while the daemon was down (their real exit status
 * is recorded); every other exec process tree in the sandbox — execs still running, launchers of the old
 * daemon — is killed, and those execs are recorded `interrupted` (killed, signal 9): nothing keeps running
 * that the store calls ended. Trees of ended execs that left processes behind (`server &`) are kept.
 */
import type { Logger } from '../../domain/logger.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { Runtime, Store } from '../ports.ts';
import { endPatch } from './exec-outcome.ts';

export async function recoverExecs(
  deps: { store: Store; runtime: Runtime; now: () => number; log: Pick<Logger, 'info' | 'warn'> },
  sandboxes: SandboxRecord[],
): Promise<{ reported: number; interrupted: number }> {
  const { store, runtime, now } = deps;
  let reported = 0;
  let interrupted = 0;
  for (const rec of sandboxes) {
    const live = store.listLiveExecs(rec.id);
    const running = live.filter((e) => e.state === 'running').map((e) => e.id);
    if (running.length === 0) continue;
    const keep = live.flatMap((e) => (e.state !== 'running' && e.tree ? [e.tree] : []));
    let found: Awaited<ReturnType<Runtime['recoverExecs']>>;
    try {
      found = await runtime.recoverExecs(rec, running, keep);
    } catch (e) {
      deps.log.warn({ sandbox: rec.id, err: String(e) }, 'could not recover the execs of a sandbox');
      continue;
    }
    for (const f of found) {
      try {
        if (f.result) {
          store.updateExec(f.id, endPatch(f.result, now()));
          reported += 1;
        } else {
          store.updateExec(f.id, {
            state: 'interrupted',
            signal: 9,
            endedAt: now(),
            leftovers: 0,
            tree: null,
          });
          interrupted += 1;
        }
      } catch {
        // removed meanwhile
      }
    }
  }
  return { reported, interrupted };
}
