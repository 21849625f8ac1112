/**
 * The OCI spec of a gvisor sandbox: the forkbox agent as PID 1 (as in every native sandbox), the image's
 * layers as a read-only root (writes stay in the sentry: runsc.ts's --overlay2), the agent's code read-only
 * and the inbox (its control socket) as the only host paths it sees, and the sandbox's limits on its
 * sentry's host cgroup.
 */

import type { Limits } from '../../domain/types.ts';
import { agentEnv } from '../native/container/oci-spec.ts';

export interface GvisorSpecInput {
  sandboxId: string;
  nonce: string;
  rootfs: string;
  agentDir: string;
  inboxDir: string;
  /** PID 1's argv (the agent on the image's python3). */
  agentArgs: string[];
  env: Record<string, string>;
  /** A pulled image's config: the default working directory and user of commands. */
  execDefaults?: { cwd: string | null; user: string | null } | undefined;
  limits: Limits;
  /** The sentry's host cgroup (relative to each controller's root). */
  cgroupsPath: string;
  hostname: string;
}

/** Mount points the skeleton holds (gVisor's gofer needs them in the root it is given). */
export const SKELETON_DIRS = ['.forkbox', '.forkbox/bin', '.forkbox/inbox'];

/** A host directory bound into the sandbox: no setuid, no devices through it. */
const bind = (destination: string, source: string, mode: 'ro' | 'rw') => ({
  destination,
  type: 'bind',
  source,
  options: ['rbind', mode, 'nosuid', 'nodev'],
});

export function gvisorOciSpec(input: GvisorSpecInput): Record<string, unknown> {
  const env = agentEnv({
    env: input.env,
    role: 'sandbox',
    id: input.sandboxId,
    execDefaults: input.execDefaults,
    extra: { FORKBOX_NONCE: input.nonce },
  });
  const { limits } = input;
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: 0, gid: 0 },
      args: input.agentArgs,
      env,
      cwd: '/',
      noNewPrivileges: true,
    },
    root: { path: input.rootfs, readonly: false },
    hostname: input.hostname,
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
      { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'mode=755'] },
      {
        destination: '/dev/pts',
        type: 'devpts',
        source: 'devpts',
        options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620', 'gid=5'],
      },
      { destination: '/dev/shm', type: 'tmpfs', source: 'shm', options: ['nosuid', 'nodev', 'mode=1777'] },
      { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
      bind('/.forkbox/bin', input.agentDir, 'ro'),
      bind('/.forkbox/inbox', input.inboxDir, 'rw'),
    ],
    linux: {
      namespaces: [{ type: 'pid' }, { type: 'network' }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }],
      cgroupsPath: input.cgroupsPath,
      // The host cgroup holds the sentry, not the sandbox's processes: memory and CPU bound the sandbox as a
      // whole; a pids limit would count the sentry's threads, so the sandbox's pids are not bounded here
      // (its capabilities say so).
      resources: {
        memory: { limit: limits.memoryBytes },
        cpu: { period: 100_000, quota: Math.max(1000, Math.round(limits.cpus * 100_000)) },
      },
    },
  };
}
