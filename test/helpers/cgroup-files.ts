/**
 * Every cgroup path a test reads, on whichever cgroup version the runtime uses here (its own detection,
 * detectCgroupLayout): under the controller's own hierarchy on v1, under the unified tree on v2. Tests
 * read kernel files here (pids.events, cpu weight, freezer state) that the Cgroups interface does not
 * expose; a path hard-coded for one version would not exist on the other, and an assertion that it is
 * absent would pass for nothing.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type CgroupLayout,
  detectCgroupLayout,
  resolveV1Mounts,
} from '../../src/runtimes/native/cgroups/index.ts';

export type Controller = 'memory' | 'pids' | 'cpu' | 'cpuacct' | 'freezer';

/** The hierarchies a sandbox's group is made in on v1 (it keeps its template's cpuset). */
const SANDBOX_V1_CONTROLLERS: readonly Controller[] = ['memory', 'pids', 'cpu', 'cpuacct', 'freezer'];

let cached: CgroupLayout | undefined;
function layout(): CgroupLayout {
  cached ??= detectCgroupLayout();
  return cached;
}

export function cgroupVersion(): 'v1' | 'v2' {
  return layout().kind;
}

/** The directory of group `rel` (relative to a hierarchy's root) that holds `controller`'s files. */
export function controllerDir(controller: Controller, rel: string): string {
  const { kind, root } = layout();
  if (kind === 'v2') return join(root, rel);
  const dir = resolveV1Mounts(root).dirs.get(controller);
  if (!dir) throw new Error(`cgroup v1: no ${controller} hierarchy under ${root}`);
  return join(dir, rel);
}

export function controllerFile(controller: Controller, rel: string, file: string): string {
  return join(controllerDir(controller, rel), file);
}

/** A sandbox's cgroup path relative to a hierarchy's root: forkbox/<state id>/sandboxes/<id>. */
export function sandboxCgroupRel(stateDir: string, id: string): string {
  const stateId = readFileSync(join(stateDir, 'state-id'), 'utf8').trim();
  return `forkbox/${stateId}/sandboxes/${id}`;
}

/**
 * A sandbox's cgroup directory holding `controller`'s files. Its leaves (`agent`, `work/<exec>`) are below
 * it in freezer on v1 and in the one tree on v2.
 */
export function sandboxCgroupDir(stateDir: string, id: string, controller: Controller): string {
  return controllerDir(controller, sandboxCgroupRel(stateDir, id));
}

/** Every directory of a sandbox's group that exists on this host: none once it is released. */
export function sandboxCgroupDirsLeft(stateDir: string, id: string): string[] {
  const rel = sandboxCgroupRel(stateDir, id);
  const controllers = cgroupVersion() === 'v2' ? (['memory'] as const) : SANDBOX_V1_CONTROLLERS;
  return controllers.map((c) => controllerDir(c, rel)).filter((d) => existsSync(d));
}

/** Host pids in a group and its sub-groups (on v2 processes live only in the leaves). */
export function procsRecursive(dir: string): number[] {
  const out = readFileSync(join(dir, 'cgroup.procs'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map(Number);
  for (const e of readdirSync(dir, { withFileTypes: true }))
    if (e.isDirectory()) out.push(...procsRecursive(join(dir, e.name)));
  return out.sort((a, b) => a - b);
}

/** Host pids of every process of a sandbox, from its pids group (the whole tree on v2). */
export function sandboxProcs(stateDir: string, id: string): number[] {
  return procsRecursive(sandboxCgroupDir(stateDir, id, 'pids'));
}

/** Whether the group is frozen: freezer.state on v1, the `frozen` key of cgroup.events on v2. */
export function isFrozen(rel: string): boolean {
  if (cgroupVersion() === 'v2')
    return readKeyed(controllerFile('freezer', rel, 'cgroup.events')).get('frozen') === 1;
  const state = readFileSync(controllerFile('freezer', rel, 'freezer.state'), 'utf8').trim();
  if (!['FROZEN', 'FREEZING', 'THAWED'].includes(state)) throw new Error(`freezer.state reads '${state}'`);
  return state !== 'THAWED';
}

/** The group's CPU weight relative to the kernel default: cpu.shares / 1024 on v1, cpu.weight / 100 on v2. */
export function cpuWeightRelative(rel: string): number {
  const [file, unit] = cgroupVersion() === 'v2' ? ['cpu.weight', 100] : ['cpu.shares', 1024];
  return Number(readFileSync(controllerFile('cpu', rel, file), 'utf8').trim()) / unit;
}

/** The `key value` lines of a cgroup file (pids.events, memory.events, cpu.stat) as a map. */
export function readKeyed(path: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v !== undefined) out.set(k, Number(v));
  }
  return out;
}

/** How many times a fork was refused in the group because it was at pids.max. */
export function pidsLimitHits(rel: string): number {
  return readKeyed(controllerFile('pids', rel, 'pids.events')).get('max') ?? 0;
}
