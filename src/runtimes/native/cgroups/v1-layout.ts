/**
 * cgroup v1's layout: each controller is its own hierarchy mounted under the root (`/sys/fs/cgroup/memory`,
 * …), or co-mounted (`cpu,cpuacct`). Which directory holds which controller, and the paths of a group's
 * directory and files in each.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import { checkRel, fileExists } from './fsio.ts';

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

/**
 * Every hierarchy mounted under `root`, by real path: the controllers forkbox uses and the rest (`devices`,
 * `blkio`, named ones such as `systemd`, a hybrid host's `unified`), in all of which runc makes a
 * container's group whether or not forkbox asked for it.
 */
export function everyMountedHierarchy(root: string): string[] {
  let entries: fs.Dirent[] = [];
  try {
    entries = fs.readdirSync(root, { withFileTypes: true });
  } catch {}
  const dirs = entries
    .filter(
      (e) => (e.isDirectory() || e.isSymbolicLink()) && fileExists(path.join(root, e.name, 'cgroup.procs')),
    )
    .map((e) => fs.realpathSync(path.join(root, e.name)));
  return [...new Set(dirs)];
}

export interface V1Layout {
  /** The hierarchy directory of a controller. */
  ctl(c: V1Controller): string;
  /** Unique hierarchy directories, cpuset first: it must be configured before anything can attach. */
  hierarchies: string[];
  /** Every mounted hierarchy (everyMountedHierarchy): where destroy looks, for the groups runc made too. */
  mounted: string[];
  /** Where a sandbox group lives (createGroup): every hierarchy with a limit or a statistic. */
  groupHierarchies: string[];
  /** A group's directory in a controller's hierarchy. */
  g(c: V1Controller, rel: string): string;
  /** A file of a group in a controller's hierarchy. */
  file(c: V1Controller, rel: string, name: string): string;
}

/** The layout under `root`; requirement_missing, with the mount command, when a controller is absent. */
export function openV1Layout(root: string): V1Layout {
  const { dirs, missing } = resolveV1Mounts(root);
  if (missing.length > 0) {
    throw new ForkboxError(
      'requirement_missing',
      `cgroup v1: controller(s) ${missing.join(', ')} not mounted under ${root}; mount them (e.g. 'mount -t cgroup -o ${missing[0]} cgroup ${path.join(root, missing[0] ?? '')}') or use a host with cgroup v2`,
      { root, missing },
    );
  }
  const ctl = (c: V1Controller): string => dirs.get(c) as string;
  const g = (c: V1Controller, rel: string): string => path.join(ctl(c), ...checkRel(rel));
  const hierarchies = [...new Set([ctl('cpuset'), ...V1_CONTROLLERS.map(ctl)])];
  return {
    ctl,
    hierarchies,
    mounted: [...new Set([...hierarchies, ...everyMountedHierarchy(root)])],
    groupHierarchies: [...new Set((['memory', 'pids', 'cpu', 'cpuacct', 'freezer'] as const).map(ctl))],
    g,
    file: (c, rel, name) => path.join(g(c, rel), name),
  };
}
