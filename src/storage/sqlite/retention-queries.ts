/**
 * Retention: what ended sandboxes leave in the database, removed in bounded steps (output first, then
 * the records after the retention time), pages given back to the filesystem, and the status counts from
 * one indexed GROUP BY. Every statement here is checked by EXPLAIN QUERY PLAN in
 * test/unit/store-retention.test.ts: none may scan the sandbox history.
 */
import type Database from 'better-sqlite3';
import { LIVE_STATES } from '../../domain/sandbox-state.ts';
import type { Store } from '../../service/ports.ts';
import { MIGRATION_7_ENDED_STATES } from './migrations.ts';
import { mapSqliteError } from './sqlite-errors.ts';

type RetentionMethods = Pick<
  Store,
  'countSandboxesByState' | 'dropEndedOutput' | 'pruneEnded' | 'vacuumIncrementally'
>;

const list = (xs: readonly string[]) => xs.map((s) => `'${s}'`).join(', ');
const LIVE = list(LIVE_STATES);
const ENDED = list(MIGRATION_7_ENDED_STATES);

/** The SQL of each statement, exported for the query-plan test. */
export const RETENTION_SQL = {
  countByState: 'SELECT state, COUNT(*) AS n FROM sandboxes WHERE tenant = ? GROUP BY state',
  countAllByState: 'SELECT state, COUNT(*) AS n FROM sandboxes GROUP BY state',
  countByNamespaceState:
    'SELECT state, COUNT(*) AS n FROM sandboxes WHERE tenant = ? AND namespace = ? GROUP BY state',
  nextDrop: 'SELECT sandbox_id FROM output_drops LIMIT 1',
  execWithOutput: `SELECT e.id FROM execs AS e WHERE e.sandbox_id = ?
     AND EXISTS (SELECT 1 FROM exec_output AS o WHERE o.exec_id = e.id) LIMIT 1`,
  dropChunks: `DELETE FROM exec_output WHERE exec_id = @exec AND seq IN
     (SELECT seq FROM exec_output WHERE exec_id = @exec ORDER BY seq LIMIT @max)`,
  zeroOutputBytes: 'UPDATE execs SET output_bytes = 0 WHERE sandbox_id = ?',
  dropDone: 'DELETE FROM output_drops WHERE sandbox_id = ?',
  // Ended long enough ago; not a tombstone (its PID 1 still holds descendants), no live child, not the
  // alias of a live sandbox (a merged winner's old id), and its output already dropped.
  pruneCandidates: `SELECT s.id FROM sandboxes AS s
     WHERE s.state IN (${ENDED}) AND s.updated_at <= @before AND s.host_pid IS NULL
       AND NOT EXISTS (SELECT 1 FROM output_drops AS d WHERE d.sandbox_id = s.id)
       AND NOT EXISTS (SELECT 1 FROM sandboxes AS c WHERE c.parent_id = s.id AND c.state IN (${LIVE}))
       AND NOT EXISTS (SELECT 1 FROM sandboxes AS p
                       WHERE p.id = json_extract(s.runtime, '$.aliasOf') AND p.state IN (${LIVE}))
     ORDER BY s.updated_at LIMIT @max`,
  deleteSandbox: 'DELETE FROM sandboxes WHERE id = ?',
} as const;

export function createRetentionQueries(db: Database.Database): RetentionMethods {
  const countByState = db.prepare<[string], { state: string; n: number }>(RETENTION_SQL.countByState);
  const countAll = db.prepare<[], { state: string; n: number }>(RETENTION_SQL.countAllByState);
  const countByNs = db.prepare<[string, string], { state: string; n: number }>(
    RETENTION_SQL.countByNamespaceState,
  );
  const nextDrop = db.prepare<[], { sandbox_id: string }>(RETENTION_SQL.nextDrop);
  const execWithOutput = db.prepare<[string], { id: string }>(RETENTION_SQL.execWithOutput);
  const dropChunks = db.prepare<{ exec: string; max: number }>(RETENTION_SQL.dropChunks);
  const zeroBytes = db.prepare<[string]>(RETENTION_SQL.zeroOutputBytes);
  const dropDone = db.prepare<[string]>(RETENTION_SQL.dropDone);
  const candidates = db.prepare<{ before: number; max: number }, { id: string }>(
    RETENTION_SQL.pruneCandidates,
  );
  const del = db.prepare<[string]>(RETENTION_SQL.deleteSandbox);

  /** One batch: up to `max` chunks of the next queued sandbox, or that sandbox marked done. */
  const dropBatch = db.transaction((max: number): { rows: number; more: boolean } => {
    const next = nextDrop.get();
    if (!next) return { rows: 0, more: false };
    const exec = execWithOutput.get(next.sandbox_id);
    if (!exec) {
      zeroBytes.run(next.sandbox_id);
      dropDone.run(next.sandbox_id);
      return { rows: 0, more: true };
    }
    return { rows: dropChunks.run({ exec: exec.id, max }).changes, more: true };
  });

  const pruneTx = db.transaction((before: number, max: number): string[] => {
    const ids = candidates.all({ before: Math.round(before), max }).map((r) => r.id);
    // Their execs go by ON DELETE CASCADE (their output is already gone: see output_drops).
    for (const id of ids) del.run(id);
    return ids;
  });

  return {
    countSandboxesByState(tenant, namespaces) {
      if (tenant !== undefined && namespaces !== undefined) {
        const out: Record<string, number> = {};
        for (const ns of new Set(namespaces))
          for (const r of countByNs.all(tenant, ns)) out[r.state] = (out[r.state] ?? 0) + r.n;
        return out;
      }
      const rows = tenant === undefined ? countAll.all() : countByState.all(tenant);
      return Object.fromEntries(rows.map((r) => [r.state, r.n]));
    },
    dropEndedOutput(maxRows) {
      let rows = 0;
      try {
        // Several small transactions: each holds the write lock only for one batch.
        for (let guard = 0; guard < 64 && rows < maxRows; guard++) {
          const b = dropBatch.immediate(Math.min(256, maxRows - rows));
          rows += b.rows;
          if (!b.more) break;
        }
      } catch (e) {
        throw mapSqliteError(e, 'drop the exec output of ended sandboxes');
      }
      return rows;
    },
    pruneEnded(before, max) {
      try {
        return pruneTx.immediate(before, Math.max(0, Math.floor(max)));
      } catch (e) {
        throw mapSqliteError(e, 'prune ended sandboxes');
      }
    },
    vacuumIncrementally(pages) {
      const before = db.pragma('freelist_count', { simple: true }) as number;
      db.pragma(`incremental_vacuum(${Math.max(0, Math.floor(pages))})`);
      return before - (db.pragma('freelist_count', { simple: true }) as number);
    },
  };
}
