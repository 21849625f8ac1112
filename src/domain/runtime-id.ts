import type { SandboxRecord } from './types.ts';

/**
 * The id the runtime knows a sandbox by (paths, cgroups, inbox). Normally its public id; after a merge
 * the parent's public id answers with the winner's processes, so its record names the winner's here.
 */
export function runtimeId(rec: SandboxRecord): string {
  return typeof rec.runtime.rid === 'string' ? rec.runtime.rid : rec.id;
}

/** The runtimes a sandbox can be made by: `native` (the default) and `gvisor` (runsc; docs/SECURITY.md). */
export const RUNTIME_NAMES = ['native', 'gvisor'] as const;
export type RuntimeName = (typeof RUNTIME_NAMES)[number];

/** The runtime that made a sandbox: its record's `runtime.kind` (records from before say nothing: native). */
export function runtimeKind(rec: { runtime: Record<string, unknown> }): RuntimeName {
  return rec.runtime.kind === 'gvisor' ? 'gvisor' : 'native';
}
