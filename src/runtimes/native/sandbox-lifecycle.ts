/**
 * A live sandbox's lifecycle in the native runtime after it is made: kill (or keep its PID 1 as a
 * tombstone), pause and resume through the freezer, and its resource usage (cgroup and disk).
 */
import { join } from 'node:path';
import { errors } from '../../domain/errors.ts';
import { runtimeId as rid } from '../../domain/runtime-id.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { Runtime } from '../../service/ports.ts';
import type { ExecSpawners } from './agent-link/exec-spawners.ts';
import type { Cgroups } from './cgroups/index.ts';
import type { NativePaths } from './host/paths.ts';
import { dirSize } from './layers/disk.ts';
import type { SnapshotDriver } from './layers/snapshot-driver.ts';
import type { ChildSpawner, LiveSandbox } from './spawn/child-spawner.ts';

export interface LifecycleDeps {
  live: Map<string, LiveSandbox>;
  cgroups: Cgroups;
  paths: NativePaths;
  snapshots: Pick<SnapshotDriver, 'usage'>;
  spawner: ChildSpawner;
  spawners: Pick<ExecSpawners, 'forget'>;
}

export function createSandboxLifecycle(
  deps: LifecycleDeps,
): Pick<Runtime, 'killSandbox' | 'pauseSandbox' | 'resumeSandbox' | 'usage'> {
  const { live, cgroups, paths, spawner, spawners } = deps;

  /** What a sandbox stores against its disk limit: from the driver's accounting, else a walk of its upper. */
  async function diskUsage(rec: SandboxRecord): Promise<{ diskBytes: number; diskInodes: number | null }> {
    const dir = paths.sandbox(rid(rec));
    const u = deps.snapshots.usage(dir);
    if (u) return { diskBytes: u.bytes, diskInodes: u.inodes };
    return { diskBytes: await dirSize(join(dir, 'upper')), diskInodes: null };
  }

  return {
    async killSandbox(rec: SandboxRecord, opts): Promise<void> {
      spawners.forget(rid(rec));
      if (!live.has(rid(rec)) && rec.hostPid !== null) live.set(rid(rec), spawner.fromRecord(rec));
      if (opts?.keepInit) {
        await spawner.tombstone(rid(rec));
        return;
      }
      const known = live.get(rid(rec)) ?? spawner.fromRecord(rec);
      await spawner.releaseKnown(known, rec.templateId || null, rec.parentId);
      await spawner.collectLayers();
    },

    async pauseSandbox(rec) {
      const sb = live.get(rid(rec));
      if (!sb) throw errors.sandboxNotRunning(rec.id, rec.state);
      // Paused before frozen: its agent's silence from now on is no failure (agent-link/liveness.ts).
      sb.paused = true;
      try {
        await cgroups.freeze(sb.cgroup);
      } catch (e) {
        sb.paused = false;
        throw e;
      }
    },

    async resumeSandbox(rec) {
      const sb = live.get(rid(rec));
      if (!sb) throw errors.sandboxNotRunning(rec.id, rec.state);
      await cgroups.thaw(sb.cgroup);
      sb.paused = false;
    },

    async usage(rec) {
      const sb = live.get(rid(rec));
      if (!sb) throw errors.sandboxNotRunning(rec.id, rec.state);
      const s = await cgroups.stats(sb.cgroup);
      return {
        memoryBytes: s.memoryBytes,
        cpuUsageNs: s.cpuUsageNs,
        pids: s.pids,
        oomKills: s.oomKills,
        ...(await diskUsage(rec)),
      };
    },
  };
}
