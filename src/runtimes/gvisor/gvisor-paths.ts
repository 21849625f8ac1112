/**
 * Where the gvisor runtime keeps what it makes, all under `<state>/gvisor/` (root-only, 0700: no host user
 * reaches a sandbox's inbox, root or checkpoint):
 *   runsc/             runsc's own state (`--root`)
 *   skeleton/          the empty mount points every sandbox's root needs (/.forkbox/{bin,inbox})
 *   sandboxes/<id>/    bundle/config.json, rootfs/ (a read-only overlay: skeleton + image layers), inbox/
 *                      (the agent's control socket; identity.json for a restored sandbox), runsc.log
 * and a fork's checkpoint image, which lives only while the fork restores it, in memory:
 *   /dev/shm/forkbox-<state id>/<id>/   (0700; under the state dir's gvisor/checkpoints/ where there is
 *                                        no /dev/shm) — written to memory, the source's pause is half
 *                                        as long as on a disk (docs/BENCHMARKS.md)
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export interface GvisorPaths {
  base: string;
  runscRoot: string;
  skeleton: string;
  sandbox(id: string): string;
  bundle(id: string): string;
  rootfs(id: string): string;
  inbox(id: string): string;
  controlSocket(id: string): string;
  log(id: string): string;
  /** Where checkpoint images are written (each fork's in a directory of its own below). */
  checkpoints: string;
  checkpoint(id: string): string;
}

export function gvisorPaths(stateDir: string, stateId: string): GvisorPaths {
  const base = join(stateDir, 'gvisor');
  const checkpoints = existsSync('/dev/shm') ? `/dev/shm/forkbox-${stateId}` : join(base, 'checkpoints');
  const sandbox = (id: string) => join(base, 'sandboxes', id);
  return {
    base,
    runscRoot: join(base, 'runsc'),
    skeleton: join(base, 'skeleton'),
    sandbox,
    bundle: (id) => join(sandbox(id), 'bundle'),
    rootfs: (id) => join(sandbox(id), 'rootfs'),
    inbox: (id) => join(sandbox(id), 'inbox'),
    controlSocket: (id) => join(sandbox(id), 'inbox', 'ctl.sock'),
    log: (id) => join(sandbox(id), 'runsc.log'),
    checkpoints,
    checkpoint: (id) => join(checkpoints, id),
  };
}
