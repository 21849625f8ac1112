/**
 * A controller's file of a sandbox's cgroup on this host, whichever cgroup version it runs: under the
 * controller's own hierarchy on v1, under the unified tree on v2. Tests read kernel counters here
 * (pids.events, cpu weight) that the Cgroups interface does not expose; a path hard-coded for one
 * version would not exist on the other, and an assertion that it is absent would pass for nothing.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { resolveV1Mounts } from '../../src/runtimes/native/cgroups/index.ts';

const ROOT = '/sys/fs/cgroup';

export type Controller = 'memory' | 'pids' | 'cpu' | 'cpuacct' | 'freezer';

export function cgroupVersion(): 'v1' | 'v2' {
  return existsSync(join(ROOT, 'cgroup.controllers')) ? 'v2' : 'v1';
}

export function controllerFile(controller: Controller, rel: string, file: string): string {
  if (cgroupVersion() === 'v2') return join(ROOT, rel, file);
  const dir = resolveV1Mounts(ROOT).dirs.get(controller);
  // A hybrid host whose v1 hierarchy lacks this controller carries it on the unified mount.
  return dir ? join(dir, rel, file) : join(ROOT, 'unified', rel, file);
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
