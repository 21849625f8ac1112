/**
 * cgroup v1: each controller is its own hierarchy mounted under the root (`/sys/fs/cgroup/memory`, …), or
 * co-mounted (`cpu,cpuacct`). A group is created in every hierarchy forkbox uses; `devices` is left to runc.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import {
  checkRel,
  childGroups,
  fileExists,
  isUnlimited,
  killPid,
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

export const V1_CONTROLLERS = ['memory', 'pids', 'cpu', 'cpuacct', 'cpuset', 'freezer'] as const;
export type V1Controller = (typeof V1_CONTROLLERS)[number];

/**
 * Map each controller to its hierarchy directory: `<root>/<name>` when present, else any directory whose
 * comma-separated name includes it (`cpu,cpuacct`). Returns the controllers that could not be found too.
 */
export function resolveV1Mounts(root: string): { dirs: Map<V1Controller, string>; missing: V1Controller[] } {
  const dirs = new Map<V1Controller, string>();
  const missing: V1Controller[] = [];
  let entries: string[] = [];
  try {
    entries = fs.readdirSync(root);
  } catch {}
  for (const c of V1_CONTROLLERS) {
    const name = entries.includes(c) ? c : entries.find((e) => e.split(',').includes(c));
    // A hierarchy root always has cgroup.procs; an empty placeholder directory does not.
    if (name !== undefined && fileExists(path.join(root, name, 'cgroup.procs'))) {
      // Symlinks like cpu -> cpu,cpuacct resolve to the same hierarchy: dedupe by real path.
      dirs.set(c, fs.realpathSync(path.join(root, name)));
    } else missing.push(c);
  }
  return { dirs, missing };
}

export function createCgroupsV1(opts: { root: string }): Cgroups {
  const { dirs, missing } = resolveV1Mounts(opts.root);
  if (missing.length > 0) {
    throw new ForkboxError(
      'requirement_missing',
      `cgroup v1: controller(s) ${missing.join(', ')} not mounted under ${opts.root}; mount them (e.g. 'mount -t cgroup -o ${missing[0]} cgroup ${path.join(opts.root, missing[0] ?? '')}') or use a host with cgroup v2`,
      { root: opts.root, missing },
    );
  }
  const ctl = (c: V1Controller): string => dirs.get(c) as string;
  /** Unique hierarchy directories, cpuset first: it must be configured before anything can attach. */
  const hierarchies = [...new Set([ctl('cpuset'), ...V1_CONTROLLERS.map(ctl)])];
  /** Where a sandbox group lives (createGroup): every hierarchy with a limit or a statistic. */
  const groupHierarchies = [...new Set((['memory', 'pids', 'cpu', 'cpuacct', 'freezer'] as const).map(ctl))];
  /** Ancestor directories known to exist (e.g. forkbox/sandboxes): created once, not per sandbox. */
  const knownDirs = new Set<string>();
  const g = (c: V1Controller, rel: string): string => path.join(ctl(c), ...checkRel(rel));
  const file = (c: V1Controller, rel: string, name: string): string => path.join(g(c, rel), name);

  /** memory.memsw (memory+swap) exists only with swap accounting, a host-wide setting: look once. */
  let memswKnown: boolean | undefined;
  async function setMemory(rel: string, bytes: number, fresh = false): Promise<void> {
    const limit = file('memory', rel, 'memory.limit_in_bytes');
    const memsw = file('memory', rel, 'memory.memsw.limit_in_bytes');
    const value = isUnlimited(bytes) ? '-1' : String(Math.floor(bytes));
    // Setting memsw to the memory limit means "no swap beyond the limit": without it a sandbox could push
    // its overflow to swap and thrash the host.
    memswKnown ??= fileExists(memsw);
    if (!memswKnown) return writeCgroupFile(limit, value);
    // The kernel requires memsw ≥ limit at every moment (EINVAL otherwise): when raising, memsw goes first;
    // when lowering, the limit goes first. A group just made is unlimited: any limit lowers it.
    const current = fresh ? Number.POSITIVE_INFINITY : await readNumber(limit);
    const raising = isUnlimited(bytes) || bytes > current;
    if (raising) {
      await writeCgroupFile(memsw, value);
      await writeCgroupFile(limit, value);
    } else {
      await writeCgroupFile(limit, value);
      await writeCgroupFile(memsw, value);
    }
  }

  async function setLimits(rel: string, limits: CgroupLimits, fresh = false): Promise<void> {
    await setMemory(rel, limits.memoryBytes, fresh);
    // pids.max is the fork-bomb guard: without it one sandbox can exhaust the host's pid space.
    await writeCgroupFile(
      file('pids', rel, 'pids.max'),
      isUnlimited(limits.pids) ? 'max' : Math.floor(limits.pids),
    );
    // A group just made has the kernel's default period, which is forkbox's.
    if (!fresh) await writeCgroupFile(file('cpu', rel, 'cpu.cfs_period_us'), CPU_PERIOD_US);
    const quota = isUnlimited(limits.cpus) ? -1 : Math.max(1000, Math.round(limits.cpus * CPU_PERIOD_US));
    await writeCgroupFile(file('cpu', rel, 'cpu.cfs_quota_us'), quota);
  }

  /** A new cpuset group starts with empty cpus/mems and attaching a process then fails with ENOSPC. */
  async function inheritCpuset(parent: string, child: string): Promise<void> {
    for (const name of ['cpuset.cpus', 'cpuset.mems']) {
      const mine = (await readCgroupFile(path.join(child, name))).trim();
      if (mine !== '') continue;
      const theirs = (await readCgroupFile(path.join(parent, name))).trim();
      await writeCgroupFile(path.join(child, name), theirs);
    }
  }

  async function freezerState(rel: string): Promise<string> {
    return (await readCgroupFile(file('freezer', rel, 'freezer.state'))).trim();
  }

  async function freeze(rel: string, timeoutMs = DEFAULT_FREEZE_TIMEOUT_MS): Promise<void> {
    await writeCgroupFile(file('freezer', rel, 'freezer.state'), 'FROZEN');
    if (await pollUntil(async () => (await freezerState(rel)) === 'FROZEN', timeoutMs)) return;
    // The v1 freezer can stay in FREEZING forever (a task stuck in an uninterruptible sleep, e.g. on NFS or
    // FUSE). Leaving it half-frozen would wedge the sandbox, so undo it before reporting.
    const state = await freezerState(rel).catch(() => 'unknown');
    await writeCgroupFile(file('freezer', rel, 'freezer.state'), 'THAWED').catch(() => {});
    throw new ForkboxError(
      'timeout',
      `cgroup v1: freezing '${rel}' did not finish within ${timeoutMs} ms (state ${state}; a process is probably stuck in uninterruptible I/O); the group was thawed again. Retry, or kill the sandbox.`,
      { cgroup: rel, state, timeoutMs },
    );
  }

  async function thaw(rel: string): Promise<void> {
    await writeCgroupFile(file('freezer', rel, 'freezer.state'), 'THAWED');
    await pollUntil(async () => (await freezerState(rel)) === 'THAWED', 1_000);
  }

  async function procs(rel: string): Promise<number[]> {
    const set = new Set<number>();
    for (const h of hierarchies) await procsRecursive(path.join(h, ...checkRel(rel)), set);
    return [...set].sort((a, b) => a - b);
  }

  /** memory.oom_control counts kills only in the memcg of the victim on v1, so sum over descendants. */
  async function oomKills(dir: string): Promise<number> {
    const text = await readOptional(path.join(dir, 'memory.oom_control'));
    let n = text === null ? 0 : (parseKeyed(text).get('oom_kill') ?? 0);
    for (const child of await childGroups(dir)) n += await oomKills(path.join(dir, child));
    return n;
  }

  /** mkdir -p of a group's ancestors in one hierarchy, remembered so later groups skip it. */
  async function ensureAncestors(h: string, parts: string[]): Promise<void> {
    let dir = h;
    for (const part of parts.slice(0, -1)) {
      const parent = dir;
      dir = path.join(dir, part);
      if (knownDirs.has(dir)) continue;
      await mkdirGroup(dir);
      if (h === ctl('cpuset')) await inheritCpuset(parent, dir);
      knownDirs.add(dir);
    }
  }

  return {
    kind: 'v1',

    async createGroup(rel, limits, leaves) {
      const parts = checkRel(rel);
      for (const leaf of leaves) checkRel(leaf);
      let fresh = true;
      for (const h of groupHierarchies) {
        await ensureAncestors(h, parts);
        let made: boolean;
        try {
          made = await mkdirGroup(path.join(h, ...parts));
        } catch (e) {
          // An ancestor removed behind our back (gc, another tool): forget what we knew and retry once.
          if ((e as ForkboxError).details?.errno !== 'ENOENT') throw e;
          knownDirs.clear();
          await ensureAncestors(h, parts);
          made = await mkdirGroup(path.join(h, ...parts));
        }
        fresh &&= made;
      }
      for (const leaf of leaves) await mkdirGroup(path.join(ctl('freezer'), ...parts, leaf));
      // Made just now in every hierarchy: it has the kernel's defaults, so nothing needs reading first.
      await setLimits(rel, limits, fresh);
    },

    async create(rel, limits) {
      const parts = checkRel(rel);
      for (const h of hierarchies) {
        let dir = h;
        for (const part of parts) {
          const parent = dir;
          dir = path.join(dir, part);
          await mkdirGroup(dir);
          // At every level, new or pre-existing (an interrupted create may have left it empty).
          if (h === ctl('cpuset')) await inheritCpuset(parent, dir);
        }
      }
      if (limits) await setLimits(rel, limits);
    },

    async setCpuWeight(rel, relative) {
      // cpu.shares takes 2..262144; 1024 is the default.
      const shares = Math.min(262144, Math.max(2, Math.round(1024 * relative)));
      await writeCgroupFile(file('cpu', rel, 'cpu.shares'), shares);
    },

    async oomKills(rel) {
      return oomKills(g('memory', rel));
    },

    setLimits: (rel, limits) => setLimits(rel, limits),

    async addProcess(rel, pid) {
      // cpuset first (it is the one that can refuse with ENOSPC), then the rest; the whole process moves.
      const parts = checkRel(rel);
      const targets: string[] = [];
      // Every hierarchy but freezer has the same layout, so one look at memory tells which it is: the
      // group itself (create, or a sandbox made before leaves went freezer-only), or a freezer-only leaf
      // of a createGroup group, whose process then joins the leaf's parent elsewhere.
      const whole = parts.length === 1 || fileExists(path.join(ctl('memory'), ...parts));
      const up = whole ? parts : parts.slice(0, -1);
      for (const h of hierarchies) {
        const dir = path.join(h, ...(h === ctl('freezer') ? parts : up));
        // cpuset: only for groups that have one there (createGroup leaves sandboxes in their template's).
        if (h === ctl('cpuset') && h !== ctl('memory') && !fileExists(dir)) continue;
        targets.push(path.join(dir, 'cgroup.procs'));
      }
      // The first hierarchy (cpuset when it has the group) alone, then the rest together: moves issued at
      // once share the grace period the first one waits for. A missing group fails with ENOENT (not_found).
      const [first, ...rest] = targets;
      if (first !== undefined) await moveToCgroup(first, pid);
      await Promise.all(rest.map((f) => moveToCgroup(f, pid)));
    },

    async createSubgroup(rel) {
      const parts = checkRel(rel);
      // Below a freezer-only leaf: its parent must exist (the sandbox's group and leaf are made first).
      if (!fileExists(path.join(ctl('freezer'), ...parts.slice(0, -1)))) {
        throw new ForkboxError(
          'not_found',
          `cgroup v1: '${parts.slice(0, -1).join('/')}' does not exist in the freezer hierarchy; create the sandbox's group first`,
          { cgroup: rel },
        );
      }
      await mkdirGroup(path.join(ctl('freezer'), ...parts));
    },

    async moveWithin(rel, pid) {
      // Every other hierarchy holds the sandbox's group only: the process is already where it belongs there.
      await moveToCgroup(path.join(g('freezer', rel), 'cgroup.procs'), pid);
    },

    procs,
    freeze,
    thaw,

    async isFrozen(rel) {
      return (await freezerState(rel)) === 'FROZEN';
    },

    async killAll(rel, timeoutMs = DEFAULT_KILL_TIMEOUT_MS) {
      if (!fileExists(g('freezer', rel))) return;
      const deadline = Date.now() + timeoutMs;
      // Freeze first so nothing can fork between listing the pids and killing them. If the freeze itself
      // times out (stuck FREEZING), killing is still the right thing to do: continue without it.
      let frozen = true;
      await freeze(rel, Math.min(timeoutMs / 2, DEFAULT_FREEZE_TIMEOUT_MS)).catch(() => {
        frozen = false;
      });
      for (const pid of await procs(rel)) killPid(pid);
      // Frozen tasks only act on SIGKILL once thawed.
      if (frozen) await thaw(rel);
      const empty = await pollUntil(
        async () => {
          const left = await procs(rel);
          for (const pid of left) killPid(pid); // anything forked in the gap (not frozen case)
          return left.length === 0;
        },
        Math.max(0, deadline - Date.now()),
        2,
      );
      if (!empty) {
        const left = await procs(rel);
        throw new ForkboxError(
          'timeout',
          `cgroup v1: processes ${left.join(', ')} in '${rel}' survived SIGKILL for ${timeoutMs} ms (stuck in uninterruptible I/O?); check 'cat /proc/<pid>/stack' and retry`,
          { cgroup: rel, pids: left },
        );
      }
    },

    async stats(rel): Promise<CgroupStats> {
      const memDir = g('memory', rel);
      const usage = await readNumber(path.join(memDir, 'memory.usage_in_bytes'));
      const memStat = parseKeyed(await readCgroupFile(path.join(memDir, 'memory.stat')));
      // usage_in_bytes is hierarchical and includes page cache; inactive file cache is reclaimable, so it
      // is not "used" in the sense a user cares about (same as docker stats).
      const inactive = memStat.get('total_inactive_file') ?? memStat.get('inactive_file') ?? 0;
      const peak = await readOptional(path.join(memDir, 'memory.max_usage_in_bytes'));
      return {
        memoryBytes: Math.max(0, usage - inactive),
        memoryPeakBytes: peak === null ? null : Number(peak.trim()),
        cpuUsageNs: await readNumber(file('cpuacct', rel, 'cpuacct.usage')),
        pids: await readNumber(file('pids', rel, 'pids.current')),
        oomKills: await oomKills(memDir),
      };
    },

    async destroy(rel) {
      const parts = checkRel(rel);
      for (const h of hierarchies) await removeGroupTree(path.join(h, ...parts));
    },

    async children(rel) {
      const names = new Set<string>();
      for (const h of hierarchies)
        for (const n of await childGroups(path.join(h, ...checkRel(rel)))) names.add(n);
      return [...names].sort();
    },

    async exists(rel) {
      const parts = checkRel(rel);
      return hierarchies.some((h) => fileExists(path.join(h, ...parts)));
    },
  };
}
