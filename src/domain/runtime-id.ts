import type { SandboxRecord } from './types.ts';

/**
 * The id the runtime knows a sandbox by (paths, cgroups, inbox). Normally its public id; after a merge
 * the parent's public id answers with the winner's processes, so its record names the winner's here.
 */
export function runtimeId(rec: SandboxRecord): string {
  return typeof rec.runtime.rid === 'string' ? rec.runtime.rid : rec.id;
}
