/** Limits applied to one cgroup. A value ≤ 0 (or not finite) means "no limit" for that resource. */
export interface CgroupLimits {
  memoryBytes: number;
  pids: number;
  /** CPU quota in whole or fractional CPUs (1.5 = 150 ms of CPU time per 100 ms period). */
  cpus: number;
}

export interface CgroupStats {
  memoryBytes: number;
  memoryPeakBytes: number | null;
  cpuUsageNs: number;
  pids: number;
  /** OOM kills inside the group (and, on v1 where the counter is per leaf, its descendants). */
  oomKills: number;
}

export interface Cgroups {
  readonly kind: 'v1' | 'v2';
  /** Create the group `rel` (e.g. 'forkbox/sandboxes/sb-abc') in every controller used, with limits. Idempotent. */
  create(rel: string, limits?: CgroupLimits): Promise<void>;
  /**
   * A sandbox's group: `rel` with its limits, plus `leaves` below it that can be frozen on their own
   * (a fork freezes a sandbox's commands but not its agent). Idempotent. On v1 the group is made only in
   * the hierarchies that carry a limit or a statistic (memory, pids, cpu, cpuacct, freezer; a sandbox
   * keeps its template's cpuset) and the leaves only in freezer: the other controllers account the group
   * as a whole, and each cgroup directory costs a mkdir (a fork of 100 made 2,400 of them before). On v2
   * the leaves are ordinary child groups.
   */
  createGroup(rel: string, limits: CgroupLimits, leaves: readonly string[]): Promise<void>;
  /**
   * The group's CPU weight relative to the default (1 = the kernel default: cpu.shares 1024 on v1,
   * cpu.weight 100 on v2). Weights only matter when CPUs are contended; they are not a limit.
   */
  setCpuWeight(rel: string, relative: number): Promise<void>;
  /** OOM kills in the group and its sub-groups (cheap: read per exec). */
  oomKills(rel: string): Promise<number>;
  setLimits(rel: string, limits: CgroupLimits): Promise<void>;
  /**
   * Moves the whole process (all its threads) into the group, via cgroup.procs. On v1, in a hierarchy
   * where a leaf of `createGroup` does not exist the process joins the leaf's parent group.
   */
  addProcess(rel: string, pid: number): Promise<void>;
  /**
   * A group below a leaf of a `createGroup` group (an exec's own group, `<sandbox>/work/<name>`), for
   * freezing and killing one part of a sandbox as a whole. It carries no limits (the sandbox's hold). On v1
   * it exists only in the hierarchy of that leaf (freezer); on v2 it is an ordinary child group. Idempotent.
   */
  createSubgroup(rel: string): Promise<void>;
  /**
   * Move a process that is already in the sandbox's group into a sub-group of it (`createSubgroup` or a
   * leaf). Only the hierarchies where that sub-group exists change: on v1 a single move (freezer), whose
   * RCU grace period (~8 ms) the caller should keep off critical paths.
   */
  moveWithin(rel: string, pid: number): Promise<void>;
  /** Host pids in the group, recursive over sub-groups, sorted ascending. */
  procs(rel: string): Promise<number[]>;
  /** Waits for FROZEN; a freeze that does not settle within the timeout is undone and throws 'timeout'. */
  freeze(rel: string, timeoutMs?: number): Promise<void>;
  thaw(rel: string): Promise<void>;
  isFrozen(rel: string): Promise<boolean>;
  /** freeze → SIGKILL every process → thaw → wait until empty (timeout). */
  killAll(rel: string, timeoutMs?: number): Promise<void>;
  stats(rel: string): Promise<CgroupStats>;
  /** Remove the group (children first), retrying EBUSY briefly. No error if absent. */
  destroy(rel: string): Promise<void>;
  /** Names of direct child groups of `rel` (for recovery and gc). */
  children(rel: string): Promise<string[]>;
  exists(rel: string): Promise<boolean>;
}

export const DEFAULT_FREEZE_TIMEOUT_MS = 5_000;
export const DEFAULT_KILL_TIMEOUT_MS = 10_000;
/** The CFS period forkbox uses everywhere: 100 ms, the kernel default. */
export const CPU_PERIOD_US = 100_000;
