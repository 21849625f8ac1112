import { join } from 'node:path';

/** Where sandboxes of state dirs made before state ids (and templates) kept their cgroups. */
export const LEGACY_SANDBOX_CGROUPS = 'forkbox/sandboxes';

/**
 * Where the native runtime keeps things in the state dir, and the names of what it makes outside it.
 * Directories that a sandbox can see (inboxes) are owned by host root with mode 0755: sandbox root is not
 * host root, so it cannot create or replace entries there (no symlink planted in a path the host later
 * chmods or mounts through). cgroups carry the state dir's id (host/state-id.ts): the cgroup tree is
 * shared by every daemon on the host.
 */
export function nativePaths(stateDir: string, stateId: string) {
  return {
    stateDir,
    stateId,
    runcRoot: join(stateDir, 'runc'),
    agentDir: (hash: string) => join(stateDir, 'agent', hash),
    template: (id: string) => join(stateDir, 'templates', id),
    templateBundle: (id: string) => join(stateDir, 'templates', id, 'bundle'),
    templateRootfs: (id: string) => join(stateDir, 'templates', id, 'bundle', 'rootfs'),
    sandbox: (id: string) => join(stateDir, 'sandboxes', id),
    /** Project layers (`p-<sandbox id>/root` + project.json): docs/STORAGE.md, "Project directories". */
    projects: join(stateDir, 'projects'),
    inbox: (id: string) => join(stateDir, 'inbox', id),
    controlSocket: (id: string) => join(stateDir, 'inbox', id, 'ctl.sock'),
    /** This state dir's own cgroup: the parent of its sandboxes' and templates' (under each controller). */
    stateCgroup: `forkbox/${stateId}`,
    /** The parent of this state dir's sandbox cgroups (relative to each controller's root). */
    sandboxCgroups: `forkbox/${stateId}/sandboxes`,
    /** cgroup path (relative to each controller's root) of a new sandbox and of a new template. */
    sandboxCgroup: (id: string) => `forkbox/${stateId}/sandboxes/${id}`,
    templateCgroup: (id: string) => `/forkbox/${stateId}/templates/${id}`,
    /**
     * The cgroup of a sandbox known from its record: the one it was made with (records of running
     * sandboxes keep it, including those made before state ids, under LEGACY_SANDBOX_CGROUPS), else where
     * this forkbox makes it (a record left 'creating' by a crash has no runtime data yet).
     */
    cgroupOf: (rec: { runtime: Record<string, unknown> }, rid: string) =>
      typeof rec.runtime.cgroup === 'string' ? rec.runtime.cgroup : `forkbox/${stateId}/sandboxes/${rid}`,
    /**
     * Where a sandbox's cgroup may be: the one it is known by, and where this forkbox makes it (a record
     * left 'creating' by a crash may have been given one before it was recorded). Release checks both.
     */
    cgroupCandidates: (cgroup: string, rid: string) => [
      ...new Set([cgroup, `forkbox/${stateId}/sandboxes/${rid}`]),
    ],
  };
}

export type NativePaths = ReturnType<typeof nativePaths>;
