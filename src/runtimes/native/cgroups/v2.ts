/**
 * cgroup v2: one unified hierarchy. Controllers must be enabled top-down in each ancestor's
 * cgroup.subtree_control, and processes may only live in leaves of a controller-enabled subtree.
 */
import path from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import {
  checkRel,
  childGroups,
  fileExists,
  freezeAndKill,
  isUnlimited,
  killUntilEmpty,
  mkdirGroup,
  moveToCgroup,
  parseKeyed,
  pollUntil,
  procsRecursive,
  readCgroupFile,
  readNumber,
  readOptional,
  removeGroupTree,
  writeCgroupFile,
} from './fsio.ts';
import {
  type CgroupLimits,
  type CgroupStats,
  type Cgroups,
  CPU_PERIOD_US,
  DEFAULT_FREEZE_TIMEOUT_MS,
  DEFAULT_KILL_TIMEOUT_MS,
} from './types.ts';

export const V2_CONTROLLERS = ['memory', 'pids', 'cpu'] as const;

function words(text: string): string[] {
  return text.split(/\s+/).filter((w) => w !== '');
}

export function createCgroupsV2(opts: { root: string }): Cgroups {
  const root = opts.root;
  const g = (rel: string): string => path.join(root, ...checkRel(rel));
  const file = (rel: string, name: string): string => path.join(g(rel), name);

  /** Enable forkbox's controllers for the children of `dir` (only those the kernel offers at this level). */
  async function enableControllers(dir: string): Promise<void> {
    const available = words(await readCgroupFile(path.join(dir, 'cgroup.controllers')));
    const enabled = words(await readCgroupFile(path.join(dir, 'cgroup.subtree_control')));
    const missing = V2_CONTROLLERS.filter((c) => !available.includes(c));
    if (missing.length > 0) {
      throw new ForkboxError(
        'requirement_missing',
        `cgroup v2: controller(s) ${missing.join(', ')} are not available in ${dir} (cgroup.controllers: '${available.join(' ')}'); enable them in the parent's cgroup.subtree_control (with systemd: Delegate=yes for the forkbox service)`,
        { path: dir, missing },
      );
    }
    const toEnable = V2_CONTROLLERS.filter((c) => !enabled.includes(c));
    if (toEnable.length === 0) return;
    const control = path.join(dir, 'cgroup.subtree_control');
    try {
      await writeCgroupFile(control, toEnable.map((c) => `+${c}`).join(' '));
    } catch {
      // A multi-controller write fails as a whole and hides which one was refused: redo one by one so the
      // error names the culprit (typically EBUSY: processes live in `dir`, "no internal processes" rule).
      for (const c of toEnable) await writeCgroupFile(control, `+${c}`);
    }
  }

  async function setLimits(rel: string, limits: CgroupLimits): Promise<void> {
    await writeCgroupFile(
      file(rel, 'memory.max'),
      isUnlimited(limits.memoryBytes) ? 'max' : Math.floor(limits.memoryBytes),
    );
    // No swap at all: without this a sandbox over its memory limit swaps instead of being OOM-killed,
    // thrashing the host. Absent when the kernel has no swap accounting (then there is nothing to limit).
    const swap = file(rel, 'memory.swap.max');
    if (fileExists(swap)) await writeCgroupFile(swap, 0);
    // pids.max is the fork-bomb guard: without it one sandbox can exhaust the host's pid space.
    await writeCgroupFile(file(rel, 'pids.max'), isUnlimited(limits.pids) ? 'max' : Math.floor(limits.pids));
    const quota = isUnlimited(limits.cpus) ? 'max' : Math.max(1000, Math.round(limits.cpus * CPU_PERIOD_US));
    await writeCgroupFile(file(rel, 'cpu.max'), `${quota} ${CPU_PERIOD_US}`);
  }

  async function isFrozen(rel: string): Promise<boolean> {
    return parseKeyed(await readCgroupFile(file(rel, 'cgroup.events'))).get('frozen') === 1;
  }

  async function freeze(rel: string, timeoutMs = DEFAULT_FREEZE_TIMEOUT_MS): Promise<void> {
    await writeCgroupFile(file(rel, 'cgroup.freeze'), 1);
    if (await pollUntil(() => isFrozen(rel), timeoutMs)) return;
    await writeCgroupFile(file(rel, 'cgroup.freeze'), 0).catch(() => {});
    throw new ForkboxError(
      'timeout',
      `cgroup v2: freezing '${rel}' did not finish within ${timeoutMs} ms; the group was thawed again. Retry, or kill the sandbox.`,
      { cgroup: rel, timeoutMs },
    );
  }

  async function thaw(rel: string): Promise<void> {
    await writeCgroupFile(file(rel, 'cgroup.freeze'), 0);
  }

  async function procs(rel: string): Promise<number[]> {
    const set = new Set<number>();
    await procsRecursive(g(rel), set);
    return [...set].sort((a, b) => a - b);
  }

  async function create(rel: string, limits?: CgroupLimits): Promise<void> {
    let dir = root;
    for (const part of checkRel(rel)) {
      // Every ancestor of a group that gets limits must delegate the controllers to its children.
      await enableControllers(dir);
      dir = path.join(dir, part);
      await mkdirGroup(dir);
    }
    if (limits) await setLimits(rel, limits);
  }

  return {
    kind: 'v2',
    create,

    async createGroup(rel, limits, leaves) {
      for (const leaf of leaves) checkRel(leaf);
      await create(rel, limits);
      // Processes may only live in leaves once the group delegates controllers to its children.
      if (leaves.length > 0) await enableControllers(g(rel));
      for (const leaf of leaves) await mkdirGroup(path.join(g(rel), leaf));
    },

    async setCpuWeight(rel, relative) {
      // cpu.weight takes 1..10000; 100 is the default.
      await writeCgroupFile(
        file(rel, 'cpu.weight'),
        Math.min(10000, Math.max(1, Math.round(100 * relative))),
      );
    },

    async oomKills(rel) {
      // memory.events is hierarchical (unless mounted with memory_localevents), so kills in leaves count.
      return parseKeyed(await readCgroupFile(file(rel, 'memory.events'))).get('oom_kill') ?? 0;
    },

    setLimits,

    async addProcess(rel, pid) {
      await moveToCgroup(file(rel, 'cgroup.procs'), pid);
    },

    async createSubgroup(rel) {
      const parts = checkRel(rel);
      const parent = path.join(root, ...parts.slice(0, -1));
      if (!fileExists(parent)) {
        throw new ForkboxError(
          'not_found',
          `cgroup v2: '${parts.slice(0, -1).join('/')}' does not exist; create the sandbox's group first`,
          { cgroup: rel },
        );
      }
      // No controllers are enabled below a leaf, so processes may live both in the leaf and in this group.
      await mkdirGroup(g(rel));
    },

    async moveWithin(rel, pid) {
      await moveToCgroup(file(rel, 'cgroup.procs'), pid);
    },

    procs,
    freeze,
    thaw,
    isFrozen,

    async killAll(rel, timeoutMs = DEFAULT_KILL_TIMEOUT_MS) {
      if (!fileExists(g(rel))) return;
      const deadline = Date.now() + timeoutMs;
      const killFile = file(rel, 'cgroup.kill');
      if (fileExists(killFile)) {
        // Kernel ≥ 5.14: kills the whole subtree atomically, no race with fork.
        await writeCgroupFile(killFile, 1);
      } else {
        await freezeAndKill({ freeze, thaw, procs }, rel, timeoutMs);
      }
      await killUntilEmpty('v2', procs, rel, { deadline, timeoutMs, everyMs: 20 });
    },

    async stats(rel): Promise<CgroupStats> {
      const peak = await readOptional(file(rel, 'memory.peak'));
      const cpu = parseKeyed(await readCgroupFile(file(rel, 'cpu.stat')));
      // memory.events is hierarchical (unless mounted with memory_localevents), so kills in leaves count.
      const events = parseKeyed(await readCgroupFile(file(rel, 'memory.events')));
      return {
        memoryBytes: await readNumber(file(rel, 'memory.current')),
        memoryPeakBytes: peak === null ? null : Number(peak.trim()),
        cpuUsageNs: (cpu.get('usage_usec') ?? 0) * 1000,
        pids: await readNumber(file(rel, 'pids.current')),
        oomKills: events.get('oom_kill') ?? 0,
      };
    },

    async destroy(rel) {
      await removeGroupTree(g(rel));
    },

    async children(rel) {
      return childGroups(g(rel));
    },

    async exists(rel) {
      return fileExists(g(rel));
    },
  };
}
