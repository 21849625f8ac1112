/**
 * What counts and ends an exec's process tree. The native runtime's trees are exec groups (cgroups the
 * host made for each command: exec-spawners.ts); a runtime whose host cannot see the sandbox's processes
 * names its own (the gvisor runtime asks the agent: sessions, agent/trees.py).
 */
import type { Cgroups } from '../cgroups/index.ts';
import { execGroup, type SpawnSlot } from './exec-spawners.ts';

export { TREE_NAME } from './exec-spawners.ts';

/** `scope`: the sandbox the tree is in (native: its cgroup). */
export interface ExecTrees {
  /** Processes in an exec's tree, but the spawner (which shares it until it moves on). */
  count(scope: string, tree: string): Promise<number>;
  /** End whatever runs in an exec's tree; returns how many processes were still there. */
  kill(scope: string, tree: string, slot?: SpawnSlot): Promise<number>;
  /** After the main process ended: how many of its processes still run (the tree goes when none do). */
  settle(scope: string, tree: string, killAll: boolean, slot?: SpawnSlot): Promise<number>;
  /** Every tree the sandbox has (recovery ends those it does not keep). */
  names(scope: string): Promise<string[]>;
}

/** The native runtime's trees: exec groups under the sandbox's cgroup. */
export function createCgroupTrees(cgroups: Cgroups): ExecTrees {
  /** Processes in an exec's group, but the spawner (which shares it until it moves on). */
  async function procs(cgroup: string, tree: string, spawnerHostPid = 0): Promise<number[]> {
    const all = await cgroups.procs(execGroup(cgroup, tree)).catch(() => [] as number[]);
    return all.filter((p) => p !== spawnerHostPid);
  }

  /** End whatever runs in an exec's group; returns how many processes were still there. */
  async function kill(cgroup: string, tree: string, slot?: SpawnSlot): Promise<number> {
    // The spawner must be out first: a freeze or kill of the group would take it too.
    await slot?.left;
    const g = execGroup(cgroup, tree);
    const n = (await procs(cgroup, tree)).length;
    try {
      await cgroups.killAll(g);
    } catch (e) {
      // The sandbox (and with it the group) went away meanwhile: nothing is left to kill.
      if (await cgroups.exists(g)) throw e;
    }
    await cgroups.destroy(g).catch(() => undefined);
    return n;
  }

  /** After the main process ended: how many of its processes still run (the group goes when none do). */
  async function settle(cgroup: string, tree: string, killAll: boolean, slot?: SpawnSlot): Promise<number> {
    if (killAll) {
      await kill(cgroup, tree, slot);
      return 0;
    }
    const left = (await procs(cgroup, tree, slot?.spawnerHostPid)).length;
    if (left === 0) {
      void (async () => {
        await slot?.left;
        await cgroups.destroy(execGroup(cgroup, tree)).catch(() => undefined);
      })();
    }
    return left;
  }

  const names = (cgroup: string) => cgroups.children(`${cgroup}/work`);

  const count = async (cgroup: string, tree: string) => (await procs(cgroup, tree)).length;

  return { count, kill, settle, names };
}
