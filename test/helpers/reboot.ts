/**
 * What a reboot (or a container restart) does to a state dir whose daemon has stopped with its sandboxes
 * running: every process of its sandboxes and templates dies and every mount under it is gone; its files
 * and its database stay.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mountsUnder } from '../../src/util/mountinfo.ts';
import { stateCgroups } from './container-leftovers.ts';
import { waitFor } from './wait-for.ts';

function groupsUnder(dir: string): string[] {
  const out = [dir];
  for (const e of readdirSync(dir, { withFileTypes: true }))
    if (e.isDirectory()) out.push(...groupsUnder(join(dir, e.name)));
  return out;
}

function procsIn(group: string): number[] {
  try {
    return readFileSync(join(group, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map(Number);
  } catch {
    return [];
  }
}

function trySet(file: string, value: string): void {
  if (!existsSync(file)) return;
  try {
    writeFileSync(file, value);
  } catch {
    // not settable in this group (a v1 root, a group going away)
  }
}

/** Kill every process of the state dir's cgroups (thawed first: a frozen process never dies). */
export async function killStateProcesses(stateDir: string): Promise<void> {
  const stateId = readFileSync(join(stateDir, 'state-id'), 'utf8').trim();
  const groups = () => stateCgroups(stateId).flatMap(groupsUnder);
  for (const g of groups()) {
    trySet(join(g, 'freezer.state'), 'THAWED');
    trySet(join(g, 'cgroup.freeze'), '0');
  }
  await waitFor(
    () => {
      let left = 0;
      for (const pid of groups().flatMap(procsIn)) {
        left += 1;
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
      return left === 0;
    },
    { what: `every process of state ${stateId} dead`, timeoutMs: 20_000, intervalMs: 100 },
  );
}

/** A reboot, as the state dir sees it: its processes dead, then its mounts gone (deepest first). */
export async function simulateReboot(stateDir: string): Promise<void> {
  await killStateProcesses(stateDir);
  for (const m of mountsUnder(stateDir).sort((a, b) => b.length - a.length))
    spawnSync('umount', ['-l', m], { stdio: 'ignore' });
  if (mountsUnder(stateDir).length > 0)
    throw new Error(`mounts left under ${stateDir}: ${mountsUnder(stateDir).join(', ')}`);
}
