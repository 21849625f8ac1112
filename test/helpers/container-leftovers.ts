/**
 * What a forkbox daemon that ran inside a container leaves on the host once the container is gone, and
 * its removal: its cgroups (a privileged container on cgroup v1 makes them in the host's hierarchies,
 * `forkbox/<state-id>/…`, or under the container's own group with a private cgroup namespace), emptied
 * by the kernel but not removed, and the loop device of its btrfs volume (`<state>/btrfs.img`).
 */
import { readdirSync, readFileSync, rmdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { runCmd } from './dockerd.ts';

const CGROUP_ROOT = '/sys/fs/cgroup';

function subdirs(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => join(dir, d.name));
  } catch {
    return [];
  }
}

/** Every `…/forkbox/<stateId>` group, in every hierarchy, at the root or below a container's group. */
export function stateCgroups(stateId: string): string[] {
  const out: string[] = [];
  for (const hier of [CGROUP_ROOT, ...subdirs(CGROUP_ROOT)]) {
    for (const base of [hier, ...subdirs(join(hier, 'docker'))]) {
      const g = join(base, 'forkbox', stateId);
      try {
        if (statSync(g).isDirectory()) out.push(g);
      } catch {
        // not in this hierarchy
      }
    }
  }
  return [...new Set(out)];
}

function rmdirTree(dir: string): void {
  for (const sub of subdirs(dir)) rmdirTree(sub);
  try {
    rmdirSync(dir);
  } catch {
    // a group still holding a process: reported by the caller's check
  }
}

/** Remove the state dir's cgroups; returns those that could not be removed. */
export function removeStateCgroups(stateDir: string): string[] {
  let stateId: string;
  try {
    stateId = readFileSync(join(stateDir, 'state-id'), 'utf8').trim();
  } catch {
    return [];
  }
  for (const g of stateCgroups(stateId)) rmdirTree(g);
  return stateCgroups(stateId);
}

/** Loop devices attached to `<stateDir>/btrfs.img`, as the host sees them. */
export async function stateLoops(stateDir: string): Promise<string[]> {
  const r = await runCmd('losetup', ['-n', '-O', 'NAME', '-j', join(stateDir, 'btrfs.img')]);
  return r.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('/dev/'));
}

export async function detachStateLoops(stateDir: string): Promise<void> {
  for (const dev of await stateLoops(stateDir)) await runCmd('losetup', ['-d', dev]);
}
