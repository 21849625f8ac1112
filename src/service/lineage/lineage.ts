/**
 * Lineage: how sandboxes relate through forks. Killing (with tombstones for parents whose pid
 * namespace still holds descendants, and cascades), forking a running sandbox into children, and
 * merging a winning fork into its ancestor (docs/ARCHITECTURE.md, "Fork", "Runtime ids" and "Tombstones"):
 * lineage-kill.ts, lineage-fork.ts and lineage-merge.ts, wired here.
 */
import type { Logger } from '../../domain/logger.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { ForkRequest, ForkResult, MergeResult, SandboxInfo } from '../api.ts';
import type { Runtime, Store } from '../ports.ts';
import { RESTARTED_LABEL } from '../recovery.ts';
import type { DiskPolicy } from '../sandboxes/disk-limits.ts';
import { type CallerRef, createForker, type ForkOptions } from './lineage-fork.ts';
import { createKiller, type Killer, nsParentOf } from './lineage-kill.ts';
import { createMerger, MERGED_LABEL } from './lineage-merge.ts';

export type { CallerRef } from './lineage-fork.ts';
export { MERGED_LABEL } from './lineage-merge.ts';
/**
 * Labels that name one sandbox's role rather than describe its contents, so a fork (or a snapshot,
 * and the sandboxes restored from it) never inherits them: the MCP default-sandbox marker and its
 * owner key (protocol/mcp/default-sandbox.ts: a child carrying them would be adopted as a client's
 * default sandbox after a restart), a merge's hidden record, and when a sandbox was started again on its
 * files after a reboot (recovery.ts). Given explicitly, they still apply.
 */
export const ROLE_LABEL_PREFIXES: readonly string[] = ['forkbox.mcp-default', MERGED_LABEL, RESTARTED_LABEL];
const isRoleLabel = (k: string) => ROLE_LABEL_PREFIXES.some((p) => k === p || k.startsWith(`${p}-`));

export interface LineageDeps {
  store: Store;
  runtime: Runtime;
  log: Pick<Logger, 'error'>;
  now: () => number;
  /** Per-sandbox serialisation of lifecycle operations (the engine's). */
  serial<T>(id: string, fn: () => Promise<T>): Promise<T>;
  abandonExecs(sandboxId: string): void;
  withKids(rec: SandboxRecord): SandboxInfo;
  disk?: DiskPolicy;
}

export interface Lineage extends Killer {
  /** The sandbox whose PID 1 holds `r`'s pid namespace (its parent, unless a merge moved it). */
  nsParentOf(r: SandboxRecord): string | null;
  /** Fork running `source` into `req.n` children: their records, the runtime's fork, each one's outcome. */
  fork(ctx: CallerRef, source: SandboxRecord, req: ForkRequest, opts?: ForkOptions): Promise<ForkResult>;
  /** Merge `winner` into its ancestor `parent`: the parent's record takes its processes, the old ones die. */
  merge(ctx: CallerRef, parent: SandboxRecord, winner: SandboxRecord): Promise<MergeResult>;
}

export function createLineage(deps: LineageDeps): Lineage {
  const { childrenHolding, releaseTombstones, kill, killTree } = createKiller(deps);
  const fork = createForker({ ...deps, isRoleLabel });
  const merge = createMerger({ ...deps, kill });
  return { nsParentOf, childrenHolding, releaseTombstones, kill, killTree, fork, merge };
}
