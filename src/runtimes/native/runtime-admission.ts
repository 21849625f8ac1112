/**
 * Admission of new sandboxes (creates and forks) by the native runtime: the daemon's file descriptors
 * first, then the host's memory, the state dir's free disk beyond what loop images may still take, and
 * the new disk limits against the storage's room (host/admission.ts).
 */
import type { RuntimeCounters } from '../../service/ports.ts';
import type { Admission } from './host/admission.ts';
import type { FdBudget } from './host/fd-budget.ts';
import type { SnapshotDriver } from './layers/snapshot-driver.ts';
import type { LiveSandbox } from './spawn/child-spawner.ts';

export interface AdmitDeps {
  admission: Admission;
  snapshots: Pick<SnapshotDriver, 'free' | 'hostPromised'>;
  live: Map<string, Pick<LiveSandbox, 'memoryBytes'>>;
  fds?: FdBudget;
  counters?: RuntimeCounters;
}

export type Admit = (children: { limits: { memoryBytes: number; diskBytes: number } }[]) => Promise<void>;

export function createAdmit(deps: AdmitDeps): Admit {
  const { live } = deps;
  return async function admit(
    children: { limits: { memoryBytes: number; diskBytes: number } }[],
  ): Promise<void> {
    try {
      deps.fds?.check(children.length);
    } catch (e) {
      deps.counters?.admissionRefused('fds');
      throw e;
    }
    await deps.admission.checkMemory({
      count: children.length,
      limitBytes: children.reduce((a, c) => a + c.limits.memoryBytes, 0),
      committedLimitBytes: [...live.values()].reduce((a, s) => a + s.memoryBytes, 0),
    });
    await deps.admission.checkDisk(deps.snapshots.hostPromised());
    deps.admission.checkDiskLimits(
      children.map((c) => c.limits.diskBytes),
      deps.snapshots.free(),
    );
  };
}
