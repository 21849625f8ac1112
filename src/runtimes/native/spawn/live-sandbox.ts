/** What the native runtime holds for each live sandbox, and how it maps to and from the store's record. */

import { ForkboxError } from '../../../domain/errors.ts';
import { runtimeId } from '../../../domain/runtime-id.ts';
import type { SandboxRecord } from '../../../domain/types.ts';
import type { SandboxHandle } from '../../../service/ports.ts';
import type { AgentConnection } from '../agent-link/agent-connection.ts';
import type { BlockRef, TemplateBlocks, UidBlock } from '../container/template-blocks.ts';
import type { NativePaths } from '../host/paths.ts';

export interface LiveSandbox {
  id: string;
  hostPid: number;
  startTime: number;
  cgroup: string;
  conn: AgentConnection | null;
  /** Resolves when an agent connection is (again) up. */
  connected: Promise<void>;
  paused: boolean;
  /** Killed, but its PID 1 stays because descendants live in its pid namespace. */
  tombstone: boolean;
  depth: number;
  /** Read-only layers under its upper, newest first. */
  lowers: string[];
  templateId: string;
  parentId: string | null;
  /** Whose inbox its mount points were made in (for clean-up after a crash mid-create). */
  spawnedIn: string;
  memoryBytes: number;
  /** OOM kills its memory cgroup had counted when last looked at (tells an OOM death from others). */
  oomSeen: number;
  /** Set once its end (death or unresponsiveness) was reported: it is reported once. */
  ended: boolean;
  /** Its block of host uids; null for a sandbox made before ranges (host uid 100000, shared). */
  block: BlockRef | null;
}

/**
 * Where a spawn's children get their host uids: each a new block of the template's range (unrelated
 * sandboxes), the parent's own block (a fork: one trust domain), or none (a parent made before ranges:
 * its children share its ids, as it does).
 */
export type ChildUids =
  | { kind: 'new'; template: string; blocks: TemplateBlocks }
  | { kind: 'inherit'; template: string; blocks: TemplateBlocks; index: number }
  /** A block its create already took (one reference, handed to the child). */
  | { kind: 'reserved'; template: string; blocks: TemplateBlocks; index: number }
  | { kind: 'legacy' };

/** A child's block, taken (one reference) for it; null for a legacy parent. Throws when none is free. */
export function takeBlock(uids: ChildUids): { block: UidBlock; ref: BlockRef } | null {
  if (uids.kind === 'legacy') return null;
  const block =
    uids.kind === 'new'
      ? uids.blocks.take()
      : uids.kind === 'reserved'
        ? uids.blocks.get(uids.index)
        : uids.blocks.acquire(uids.index);
  if (!block)
    throw new ForkboxError(
      'resource_exhausted',
      uids.kind === 'new'
        ? `template ${uids.template} has no free block of host uids left; try again (a new template is started for the next create).`
        : `block ${uids.index} of template ${uids.template} is gone.`,
    );
  return { block, ref: { template: uids.template, index: block.index, base: block.base } };
}

export interface ParentRef {
  /** Template or sandbox id (its inbox is where the children's mounts are made). */
  id: string;
  hostPid: number;
  conn: AgentConnection;
  templateId: string;
  /** -1 for a template. */
  depth: number;
  lowers: string[];
  uids: ChildUids;
}

export type SpawnOutcome =
  | { id: string; ok: true; handle: SandboxHandle }
  | { id: string; ok: false; error: ForkboxError };

/** Children per fork request to the parent's agent (see `spawn`). */
export const FORK_WAVE = 16;

/** Leaves of every sandbox cgroup: a fork freezes `work` while `agent` and `repl` keep running. */
export const LEAVES = ['agent', 'repl', 'work'] as const;

export function handleOf(sb: LiveSandbox): SandboxHandle {
  return {
    id: sb.id,
    hostPid: sb.hostPid,
    runtime: {
      rid: sb.id,
      templateId: sb.templateId,
      cgroup: sb.cgroup,
      startTime: sb.startTime,
      depth: sb.depth,
      lowers: sb.lowers,
      spawnedIn: sb.spawnedIn,
      ...(sb.block ? { block: sb.block } : {}),
    },
  };
}

/** A record's block (its runtime data), or null when it has none. */
function blockOf(r: Record<string, unknown>): BlockRef | null {
  const b = r.block as Partial<BlockRef> | undefined;
  return b && typeof b.template === 'string' && typeof b.index === 'number' && typeof b.base === 'number'
    ? { template: b.template, index: b.index, base: b.base }
    : null;
}

/** A live entry for a sandbox known from the store (recovery, or a kill after a restart). */
export function liveFromRecord(rec: SandboxRecord, paths: NativePaths): LiveSandbox {
  const r = rec.runtime;
  const rid = runtimeId(rec);
  return {
    id: rid,
    hostPid: rec.hostPid ?? 0,
    startTime: typeof r.startTime === 'number' ? r.startTime : 0,
    cgroup: paths.cgroupOf(rec, rid),
    conn: null,
    connected: Promise.resolve(),
    paused: rec.state === 'paused',
    tombstone: r.tombstone === true,
    depth: typeof r.depth === 'number' ? r.depth : rec.depth,
    lowers: Array.isArray(r.lowers) ? (r.lowers as string[]) : [],
    templateId: rec.templateId,
    parentId: rec.parentId,
    spawnedIn: typeof r.spawnedIn === 'string' ? r.spawnedIn : rec.templateId,
    memoryBytes: rec.limits.memoryBytes,
    oomSeen: 0,
    ended: false,
    block: blockOf(r),
  };
}
