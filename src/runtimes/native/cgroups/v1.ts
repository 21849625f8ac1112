/**
 * cgroup v1: each controller is its own hierarchy (v1-layout.ts). A group is created in every hierarchy
 * forkbox uses; `devices` is left to runc. Limits, the freezer and statistics are in v1-limits.ts,
 * v1-freezer.ts and v1-stats.ts; this file makes, moves into and removes groups.
 */
import path from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import {
  checkRel,
  childGroups,
  fileExists,
  mkdirGroup,
  moveToCgroup,
  readCgroupFile,
  removeGroupTree,
  writeCgroupFile,
} from './fsio.ts';
import type { Cgroups } from './types.ts';
import { createV1Freezer } from './v1-freezer.ts';
import { openV1Layout } from './v1-layout.ts';
import { createV1Limits } from './v1-limits.ts';
import { oomKillsV1, statsV1 } from './v1-stats.ts';

export { resolveV1Mounts, V1_CONTROLLERS, type V1Controller } from './v1-layout.ts';

export function createCgroupsV1(opts: { root: string }): Cgroups {
  const layout = openV1Layout(opts.root);
  const { ctl, hierarchies, groupHierarchies, g } = layout;
  const limits = createV1Limits(layout);
  const freezer = createV1Freezer(layout);
  /** Ancestor directories known to exist (e.g. forkbox/sandboxes): created once, not per sandbox. */
  const knownDirs = new Set<string>();

  /** A new cpuset group starts with empty cpus/mems and attaching a process then fails with ENOSPC. */
  async function inheritCpuset(parent: string, child: string): Promise<void> {
    for (const name of ['cpuset.cpus', 'cpuset.mems']) {
      const mine = (await readCgroupFile(path.join(child, name))).trim();
      if (mine !== '') continue;
      const theirs = (await readCgroupFile(path.join(parent, name))).trim();
      await writeCgroupFile(path.join(child, name), theirs);
    }
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

    async createGroup(rel, l, leaves) {
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
      await limits.setLimits(rel, l, fresh);
    },

    async create(rel, l) {
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
      if (l) await limits.setLimits(rel, l);
    },

    setCpuWeight: limits.setCpuWeight,

    oomKills: (rel) => oomKillsV1(g('memory', rel)),

    setLimits: (rel, l) => limits.setLimits(rel, l),

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

    procs: freezer.procs,
    freeze: freezer.freeze,
    thaw: freezer.thaw,
    isFrozen: freezer.isFrozen,
    killAll: freezer.killAll,

    stats: (rel) => statsV1(layout, rel),

    async destroy(rel) {
      const parts = checkRel(rel);
      // Every mounted hierarchy: runc made the container's group in those forkbox never limits too.
      for (const h of layout.mounted) await removeGroupTree(path.join(h, ...parts));
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
