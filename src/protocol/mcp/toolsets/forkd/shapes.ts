/**
 * forkd's wire shapes, filled from forkbox's records (docs/TOOLSETS.md, "forkd"):
 *
 *   SandboxInfo  = {id, snapshot_tag, netns, guest_addr, created_at_unix, pid, memory_limit_mib}
 *   SnapshotInfo = {tag, dir, created_at_unix, bootable, branched_from?, pause_ms?, status?, warning?}
 *   (branched_from, pause_ms and status only on branch_sandbox's result, warning on create_snapshot's)
 *
 * Fields that describe a microVM forkbox does not have are null, never invented: `netns` (every forkbox
 * sandbox has its own network namespace, unnamed), `guest_addr` (no TCP agent: the agent speaks over a
 * Unix socket) and `pid` (a host pid is not shown to callers). A tag is a forkbox snapshot's name, or a
 * template's name (the tags that exist before any snapshot is taken, `default` among them); `dir` names
 * which (`snapshot:<id>` / `template:<name>`), not a host path.
 */
import { z } from 'zod';
import type { SandboxInfo, SnapshotInfo, TemplateInfo } from '../../../../service/api.ts';
import { refSchema } from '../../../bounds.ts';

/** Label carrying the tag a sandbox was spawned from (forkd's `snapshot_tag`). */
export const TAG_LABEL = 'forkd.snapshot-tag';

/** forkd's tag rule (`^[A-Za-z0-9_-]{1,64}$`). */
export const tagArg = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, '1-64 letters, digits, _ or -');

export const sandboxIdArg = refSchema().describe('Sandbox id (from spawn_sandboxes or list_sandboxes)');

const unix = (iso: string | null) => (iso === null ? 0 : Math.floor(Date.parse(iso) / 1000));

export function forkdSandbox(s: SandboxInfo) {
  return {
    id: s.id,
    snapshot_tag: s.labels[TAG_LABEL] ?? null,
    netns: null,
    guest_addr: null,
    created_at_unix: unix(s.createdAt),
    pid: null,
    memory_limit_mib: Math.round(s.limits.memoryBytes / (1024 * 1024)),
  };
}

export function forkdSnapshot(s: SnapshotInfo) {
  return {
    tag: s.name,
    dir: `snapshot:${s.id}`,
    created_at_unix: unix(s.createdAt),
    bootable: true,
  };
}

export function forkdTemplate(t: TemplateInfo) {
  return { tag: t.name, dir: `template:${t.name}`, created_at_unix: unix(t.createdAt), bootable: true };
}

/** Python run before forkd's eval code: forkd's PID 1 had numpy imported (no-op once imported). */
export const NUMPY_PRELUDE = 'try:\n    import numpy\nexcept ImportError:\n    pass\n';
