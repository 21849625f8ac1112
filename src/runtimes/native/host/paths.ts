import { join } from 'node:path';

/**
 * Where the native runtime keeps things in the state dir. Directories that a sandbox can see (inboxes)
 * are owned by host root with mode 0755: sandbox root is not host root, so it cannot create or replace
 * entries there (no symlink planted in a path the host later chmods or mounts through).
 */
export function nativePaths(stateDir: string) {
  return {
    stateDir,
    runcRoot: join(stateDir, 'runc'),
    agentDir: (hash: string) => join(stateDir, 'agent', hash),
    template: (id: string) => join(stateDir, 'templates', id),
    templateBundle: (id: string) => join(stateDir, 'templates', id, 'bundle'),
    templateRootfs: (id: string) => join(stateDir, 'templates', id, 'bundle', 'rootfs'),
    sandbox: (id: string) => join(stateDir, 'sandboxes', id),
    inbox: (id: string) => join(stateDir, 'inbox', id),
    controlSocket: (id: string) => join(stateDir, 'inbox', id, 'ctl.sock'),
    /** cgroup path (relative to each controller's root) of a sandbox and of a template. */
    sandboxCgroup: (id: string) => `forkbox/sandboxes/${id}`,
    templateCgroup: (id: string) => `/forkbox/templates/${id}`,
  };
}

export type NativePaths = ReturnType<typeof nativePaths>;
