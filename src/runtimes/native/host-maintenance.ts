/**
 * `forkbox gc` and `forkbox df` for the native runtime: find what no live sandbox or template uses, and
 * the temporaries a crash left (image work dirs, half-made layers). The daemon's start runs the same gc.
 *
 * Scope: only this state dir's objects. Mounts, inboxes and sandbox dirs are under the state dir; cgroups
 * are under `forkbox/<state-id>/` (host/state-id.ts). The cgroup tree is shared by every daemon on the
 * host, so another state dir's sandboxes are never looked at; groups in the pre-state-id location
 * (`forkbox/sandboxes/<id>`) are touched only when this state dir's store knows the id.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { ImageRecord } from '../../domain/types.ts';
import type { DiskUsage, GcReport } from '../../service/api.ts';
import type { Cgroups } from './cgroups/index.ts';
import type { Mounts } from './host/mounts.ts';
import { LEGACY_SANDBOX_CGROUPS, type NativePaths } from './host/paths.ts';
import { dirSize } from './layers/disk.ts';
import type { SnapshotDriver } from './layers/snapshot-driver.ts';

function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

export type HostGcReport = Omit<GcReport, 'removedSandboxes'>;

export interface HostMaintenance {
  /** What the state dir's images and sandbox dirs take on disk, and how full its filesystem is. */
  diskUsage(): Promise<DiskUsage>;
  /**
   * Remove what no sandbox in `keep` (runtime ids of every sandbox holding processes: live ones and
   * tombstones) uses. `ours(id)`: whether this state dir's store knows the sandbox id.
   */
  gc(keep: Set<string>, ours: (id: string) => boolean): Promise<HostGcReport>;
}

export function createHostMaintenance(deps: {
  paths: NativePaths;
  mounts: Mounts;
  cgroups: Cgroups;
  images: { list(): ImageRecord[]; sweepTemps?(): Promise<string[]> };
  snapshots: Pick<SnapshotDriver, 'removeSandboxDir' | 'sweepTemps' | 'hostPromised'>;
}): HostMaintenance {
  const { paths, mounts, cgroups } = deps;

  /** Inboxes (and half-made children's mount points in templates' inboxes) of no live sandbox. */
  function sweepInboxes(keep: Set<string>, out: HostGcReport): void {
    const templates = new Set(entries(join(paths.stateDir, 'templates')));
    for (const id of entries(join(paths.stateDir, 'inbox'))) {
      if (templates.has(id) || keep.has(id)) {
        // Mount points of children under a parent's inbox, left by a crash mid-create or mid-fork.
        for (const child of entries(paths.inbox(id))) {
          const base = child.replace(/-inbox$/, '');
          if (child === 'ctl.sock' || keep.has(base)) continue;
          out.removedMounts.push(...mounts.detachAllUnder(join(paths.inbox(id), child)));
          rmSync(join(paths.inbox(id), child), { recursive: true, force: true });
          out.removedDirs.push(join(paths.inbox(id), child));
        }
        continue;
      }
      out.removedMounts.push(...mounts.detachAllUnder(paths.inbox(id)));
      rmSync(paths.inbox(id), { recursive: true, force: true });
      out.removedDirs.push(paths.inbox(id));
    }
  }

  async function sweepCgroups(parent: string, remove: (id: string) => boolean, out: HostGcReport) {
    if (!(await cgroups.exists(parent))) return;
    for (const id of await cgroups.children(parent)) {
      if (!remove(id)) continue;
      const cg = `${parent}/${id}`;
      await cgroups.killAll(cg);
      await cgroups.destroy(cg);
      out.removedCgroups.push(cg);
    }
  }

  return {
    async diskUsage(): Promise<DiskUsage> {
      const images = [];
      for (const img of deps.images.list()) {
        let bytes = 0;
        for (const l of img.layers) bytes += await dirSize(l);
        images.push({ name: img.name, bytes });
      }
      const sandboxes = [];
      for (const id of entries(join(paths.stateDir, 'sandboxes'))) {
        // What its dir holds now (a quota's count can lag behind until the filesystem commits).
        sandboxes.push({ id, bytes: await dirSize(paths.sandbox(id)) });
      }
      const totalBytes = await dirSize(paths.stateDir);
      const fs = await statfs(paths.stateDir);
      const filesystem = {
        sizeBytes: fs.blocks * fs.bsize,
        freeBytes: fs.bavail * fs.bsize,
        promisedBytes: deps.snapshots.hostPromised(),
      };
      return { stateDir: paths.stateDir, images, sandboxes, totalBytes, filesystem };
    },

    async gc(keep: Set<string>, ours: (id: string) => boolean): Promise<HostGcReport> {
      const out: HostGcReport = { removedMounts: [], removedCgroups: [], removedDirs: [] };
      sweepInboxes(keep, out);
      // Sandbox dirs, and the copy driver's per-sandbox disk images (<state>/disks/<id>.img), whose
      // dir may be gone already: the driver unmounts and deletes both.
      const images = entries(join(paths.stateDir, 'disks'))
        .filter((n) => n.endsWith('.img'))
        .map((n) => n.slice(0, -4));
      for (const id of new Set([...entries(join(paths.stateDir, 'sandboxes')), ...images])) {
        if (keep.has(id)) continue;
        await deps.snapshots.removeSandboxDir(paths.sandbox(id));
        out.removedDirs.push(paths.sandbox(id));
      }
      // What a crash left mid-build, mid-import, mid-pull or mid-snapshot (nothing of a call in flight).
      out.removedDirs.push(
        ...((await deps.images.sweepTemps?.()) ?? []),
        ...(await deps.snapshots.sweepTemps()),
      );
      await sweepCgroups(paths.sandboxCgroups, (id) => !keep.has(id), out);
      await sweepCgroups(LEGACY_SANDBOX_CGROUPS, (id) => ours(id) && !keep.has(id), out);
      out.removedDirs = out.removedDirs.filter((d) => !existsSync(d));
      return out;
    },
  };
}
