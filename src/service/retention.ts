/**
 * Retention: what a sandbox leaves in the database after it ends. Its exec output goes at once (in small
 * batches, a few per sweep: a kill never stalls the daemon on a gigabyte of deletes); the sandbox record
 * and its execs go `retentionMs` after it ended (0 = at the next sweep); the pages freed are given back to
 * the filesystem (the database is in auto_vacuum=INCREMENTAL mode). Each sweep is bounded in rows.
 */
import type { Logger } from '../domain/logger.ts';
import type { Store } from './ports.ts';

/** Default retention of ended sandboxes: a day. */
export const DEFAULT_RETENTION_MS = 24 * 3600 * 1000;
/** Output chunks deleted per sweep (a chunk is one read of a command's output, up to 64 KiB). */
const OUTPUT_ROWS_PER_SWEEP = 2048;
const SANDBOXES_PER_SWEEP = 500;
/** Pages (4 KiB) given back per sweep. */
const PAGES_PER_SWEEP = 4096;

export interface RetentionReport {
  outputChunks: number;
  pruned: string[];
  pagesFreed: number;
}

export interface Retention {
  /** How long an ended sandbox's record and execs are kept (0: until the next sweep). */
  readonly retentionMs: number;
  /** One bounded step of clean-up; call it periodically (the daemon does, every second). */
  sweep(): RetentionReport;
}

export function createRetention(deps: {
  store: Store;
  now?: () => number;
  retentionMs?: number;
  log?: Pick<Logger, 'info'>;
}): Retention {
  const now = deps.now ?? Date.now;
  const retentionMs = deps.retentionMs ?? DEFAULT_RETENTION_MS;
  if (!Number.isFinite(retentionMs) || retentionMs < 0)
    throw new Error(`retention must be a duration >= 0 ms, not ${retentionMs}`);
  return {
    retentionMs,
    sweep() {
      const outputChunks = deps.store.dropEndedOutput(OUTPUT_ROWS_PER_SWEEP);
      const pruned = deps.store.pruneEnded(now() - retentionMs, SANDBOXES_PER_SWEEP);
      const pagesFreed = deps.store.vacuumIncrementally(PAGES_PER_SWEEP);
      if (pruned.length > 0)
        deps.log?.info(
          { pruned: pruned.length, outputChunks, pagesFreed },
          'retention: ended sandboxes pruned',
        );
      return { outputChunks, pruned, pagesFreed };
    },
  };
}
