/** `forkbox gc` and `forkbox df` for the native runtime: find what no live sandbox or template uses. */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ImageRecord } from '../../domain/types.ts';
import type { DiskUsage, GcReport } from '../../service/api.ts';
import type { Cgroups } from './cgroups/index.ts';
import type { Mounts } from './host/mounts.ts';
import type { NativePaths } from './host/paths.ts';
import { dirSize } from './storage/disk.ts';
import type { SnapshotDriver } from './storage/snapshot-driver.ts';

function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

export function createHostMaintenance(deps: {
  paths: NativePaths;
  mounts: Mounts;
  cgroups: Cgroups;
  images: { list(): ImageRecord[] };
  snapshots: Pick<SnapshotDriver, 'removeSandboxDir'>;
}) {
  const { paths, mounts, cgroups } = deps;
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
        sandboxes.push({ id, bytes: await dirSize(paths.sandbox(id)) });
      }
      const totalBytes = await dirSize(paths.stateDir);
      return { stateDir: paths.stateDir, images, sandboxes, totalBytes };
    },

    async gc(live: Set<string>): Promise<Omit<GcReport, 'removedSandboxes'>> {
      const removedMounts: string[] = [];
      const removedCgroups: string[] = [];
      const removedDirs: string[] = [];
      const templates = new Set(entries(join(paths.stateDir, 'templates')));
      for (const id of entries(join(paths.stateDir, 'inbox'))) {
        if (templates.has(id)) {
          // Half-made children's mount points left under a template inbox by a crash mid-create.
          for (const child of entries(paths.inbox(id))) {
            const base = child.replace(/-inbox$/, '');
            if (child !== 'ctl.sock' && !live.has(base)) {
              removedMounts.push(...mounts.detachAllUnder(join(paths.inbox(id), child)));
              rmSync(join(paths.inbox(id), child), { recursive: true, force: true });
              removedDirs.push(join(paths.inbox(id), child));
            }
          }
          continue;
        }
        if (live.has(id)) continue;
        removedMounts.push(...mounts.detachAllUnder(paths.inbox(id)));
        rmSync(paths.inbox(id), { recursive: true, force: true });
        removedDirs.push(paths.inbox(id));
      }
      // Sandbox dirs, and the copy driver's per-sandbox disk images (<state>/disks/<id>.img), whose
      // dir may be gone already: the driver unmounts and deletes both.
      const images = entries(join(paths.stateDir, 'disks'))
        .filter((n) => n.endsWith('.img'))
        .map((n) => n.slice(0, -4));
      for (const id of new Set([...entries(join(paths.stateDir, 'sandboxes')), ...images])) {
        if (live.has(id)) continue;
        await deps.snapshots.removeSandboxDir(paths.sandbox(id));
        removedDirs.push(paths.sandbox(id));
      }
      if (await cgroups.exists('forkbox/sandboxes')) {
        for (const id of await cgroups.children('forkbox/sandboxes')) {
          if (live.has(id)) continue;
          const cg = paths.sandboxCgroup(id);
          await cgroups.killAll(cg);
          await cgroups.destroy(cg);
          removedCgroups.push(cg);
        }
      }
      return { removedMounts, removedCgroups, removedDirs: removedDirs.filter((d) => !existsSync(d)) };
    },
  };
}
