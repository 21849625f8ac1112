/**
 * Giving back what a sandbox holds on the host: its processes, cgroups, mounts, inbox, control socket and
 * storage — for a kill, for a sandbox that died, and for one left half-made by a failed fork or a crash.
 */
import { rmdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { EgressProxies } from '../../../network/egress-proxies.ts';
import type { OpenNats } from '../../../network/open-nat.ts';
import type { InboxHub } from '../agent-link/inbox-hub.ts';
import type { Cgroups } from '../cgroups/index.ts';
import type { Mounts } from '../host/mounts.ts';
import type { NativePaths } from '../host/paths.ts';
import { isAlive } from '../host/proc.ts';
import { listProjectLayers, removeProjectLayer } from '../layers/project-layer.ts';
import type { SnapshotDriver } from '../layers/snapshot-driver.ts';
import { LEAVES, type LiveSandbox } from './live-sandbox.ts';

export interface ReleaseDeps {
  paths: NativePaths;
  mounts: Mounts;
  cgroups: Cgroups;
  hub: InboxHub;
  snapshots: SnapshotDriver;
  live: Map<string, LiveSandbox>;
  pinnedLayers?: () => string[];
  egress?: EgressProxies | undefined;
  nat?: OpenNats | undefined;
  /** Closes a sandbox's published ports and its ports socket. */
  closePorts?: ((id: string) => void) | undefined;
  /** Give back a sandbox's reference to its block of host uids. */
  releaseBlock(ref: { template: string; index: number }): void;
}

export interface Releaser {
  /** Detaches and removes a child's mount points under its parent's inbox. */
  dropMountPoints(parentId: string, id: string): void;
  /** Releases all a sandbox holds on the host (`known`: its entry if not live; `keepFiles`: keep its dir). */
  release(
    id: string,
    inboxOwners: (string | null)[],
    known?: LiveSandbox,
    opts?: { keepFiles?: boolean },
  ): Promise<void>;
  /** Kills a sandbox's own processes but keeps its PID 1 (frozen) for the descendants in its namespace. */
  tombstone(id: string): Promise<void>;
  /** Removes snapshot and project layers that no live sandbox (tombstones included) stacks on, nor pins. */
  collectLayers(): Promise<void>;
}

export function createReleaser(deps: ReleaseDeps): Releaser {
  const { paths, mounts, cgroups, hub, live } = deps;

  /**
   * Host-side mount points of a child under its parent's inbox (the child has its own copies):
   * `<id>/root` and `<id>/inbox` (fork-wave.ts), and `<id>` and `<id>-inbox` as made before.
   */
  function dropMountPoints(parentId: string, id: string): void {
    const base = join(paths.inbox(parentId), id);
    for (const p of [join(base, 'root'), join(base, 'inbox'), base, `${base}-inbox`]) {
      mounts.detach(p);
      try {
        rmdirSync(p);
      } catch {
        // not there (or <id> itself, before its two are gone)
      }
    }
  }

  /** Kill every process of a sandbox cgroup and remove it (and its leaves). */
  async function removeGroup(cg: string): Promise<void> {
    if (!(await cgroups.exists(cg))) return;
    // A tombstone's agent leaf is frozen on its own: on cgroup v1 thawing the parent leaves a
    // self-frozen child frozen, and a frozen process never acts on its SIGKILL.
    for (const leaf of LEAVES) {
      if (await cgroups.exists(`${cg}/${leaf}`)) await cgroups.thaw(`${cg}/${leaf}`).catch(() => undefined);
    }
    await cgroups.killAll(cg);
    await cgroups.destroy(cg);
  }

  /**
   * Release everything a sandbox holds on the host. Safe on a half-made sandbox. `sb` is its live entry
   * when the runtime has none (a record after a restart). `keepFiles`: its storage dir stays (a sandbox
   * whose processes ended with a reboot, about to be started again on its files).
   */
  async function release(
    id: string,
    inboxOwners: (string | null)[],
    known?: LiveSandbox,
    opts: { keepFiles?: boolean } = {},
  ): Promise<void> {
    // A live entry with a block holds one reference to it (fork-wave.ts, recovery); a record does not.
    const held = live.get(id)?.block ?? null;
    const sb = live.get(id) ?? known;
    live.delete(id);
    if (sb) sb.ended = true;
    sb?.conn?.close('closed because the sandbox was killed');
    hub.close(id);
    if (sb && sb.hostPid > 0 && isAlive(sb.hostPid, sb.startTime)) {
      // SIGKILL to PID 1 of the sandbox's pid namespace kills every process in it.
      try {
        process.kill(sb.hostPid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (const cg of paths.cgroupCandidates(sb?.cgroup ?? paths.sandboxCgroup(id), id)) await removeGroup(cg);
    for (const owner of new Set([...inboxOwners, sb?.spawnedIn ?? null]))
      if (owner) dropMountPoints(owner, id);
    deps.egress?.close(id);
    await deps.nat?.stop(id);
    deps.closePorts?.(id);
    mounts.detachAllUnder(paths.inbox(id));
    rmSync(paths.inbox(id), { recursive: true, force: true });
    // Through the storage driver: on btrfs the sandbox dir is a subvolume (deleted in O(1)).
    if (opts.keepFiles !== true) await deps.snapshots.removeSandboxDir(paths.sandbox(id));
    if (held) deps.releaseBlock(held);
  }

  return {
    dropMountPoints,
    release,

    async tombstone(id: string): Promise<void> {
      const sb = live.get(id);
      if (!sb) return;
      sb.tombstone = true;
      sb.ended = true;
      sb.conn?.close('closed because the sandbox was killed');
      hub.close(id);
      deps.closePorts?.(id);
      await deps.nat?.stop(id);
      const agentLeaf = `${sb.cgroup}/agent`;
      for (const p of await cgroups.procs(agentLeaf))
        if (p !== sb.hostPid) await cgroups.addProcess(`${sb.cgroup}/work`, p).catch(() => undefined);
      // Frozen, PID 1 cannot restart the REPL worker we are about to kill.
      await cgroups.freeze(agentLeaf);
      await cgroups.killAll(`${sb.cgroup}/repl`);
      await cgroups.killAll(`${sb.cgroup}/work`);
    },

    async collectLayers(): Promise<void> {
      const used = new Set([...live.values()].flatMap((s) => s.lowers));
      for (const l of deps.pinnedLayers?.() ?? []) used.add(l);
      for (const layer of await deps.snapshots.list())
        if (!used.has(layer)) await deps.snapshots.remove(layer);
      for (const layer of listProjectLayers(deps.paths.projects))
        if (!used.has(layer)) removeProjectLayer(layer);
    },
  };
}
