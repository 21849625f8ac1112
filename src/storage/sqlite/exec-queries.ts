/** Exec and exec-output statements, prepared once per store instance. */
import type Database from 'better-sqlite3';
import { ForkboxError } from '../../domain/errors.ts';
import type { ExecRecord, ExecState } from '../../domain/types.ts';
import type { ExecOutputChunk, Store } from '../../service/ports.ts';
import { applyPatch, type ExecRow, execToRow, rowToExec } from './rows.ts';
import { mapSqliteError } from './sqlite-errors.ts';

type ExecMethods = Pick<
  Store,
  | 'insertExec'
  | 'getExec'
  | 'findExecByIdempotencyKey'
  | 'listExecs'
  | 'updateExec'
  | 'markRunningExecs'
  | 'listLiveExecs'
  | 'appendExecOutput'
  | 'readExecOutput'
  | 'firstExecOutputSeq'
>;

interface OutputRow {
  seq: number;
  stream: string;
  data: Buffer;
  offset: number | null;
}

function execNotFound(id: string): ForkboxError {
  return new ForkboxError(
    'not_found',
    `no exec '${id}'. List a sandbox's execs with 'forkbox exec ls <sandbox>'.`,
    {
      exec: id,
    },
  );
}

export function createExecQueries(db: Database.Database, now: () => number): ExecMethods {
  const insert = db.prepare<ExecRow>(
    `INSERT INTO execs (id, sandbox_id, idempotency_key, command, state, exit_code, signal, timed_out, truncated,
       oom_killed, started_at, ended_at, leftovers, tree, streams)
     VALUES (@id, @sandbox_id, @idempotency_key, @command, @state, @exit_code, @signal, @timed_out, @truncated,
       @oom_killed, @started_at, @ended_at, @leftovers, @tree, @streams)`,
  );
  const getById = db.prepare<[string], ExecRow>('SELECT * FROM execs WHERE id = ?');
  const byKey = db.prepare<[string, string], ExecRow>(
    'SELECT * FROM execs WHERE sandbox_id = ? AND idempotency_key = ?',
  );
  // Newest first: with a limit, callers want the most recent execs. LIMIT -1 = no limit.
  const listBySandbox = db.prepare<[string, number], ExecRow>(
    'SELECT * FROM execs WHERE sandbox_id = ? ORDER BY started_at DESC, id DESC LIMIT ?',
  );
  const update = db.prepare<ExecRow>(
    `UPDATE execs SET idempotency_key = @idempotency_key, command = @command, state = @state,
       exit_code = @exit_code, signal = @signal, timed_out = @timed_out, truncated = @truncated,
       oom_killed = @oom_killed, started_at = @started_at, ended_at = @ended_at, leftovers = @leftovers,
       tree = @tree, streams = @streams
     WHERE id = @id`,
  );
  const live = db.prepare<[string], ExecRow>(
    "SELECT * FROM execs WHERE sandbox_id = ? AND (state = 'running' OR tree IS NOT NULL) ORDER BY started_at, id",
  );
  const firstSeq = db.prepare<[string], { seq: number }>(
    'SELECT seq FROM exec_output WHERE exec_id = ? ORDER BY seq LIMIT 1',
  );
  const markRunning = db.prepare<[string, number]>(
    "UPDATE execs SET state = ?, ended_at = COALESCE(ended_at, ?) WHERE state = 'running'",
  );
  const addBytes = db.prepare<[number, string], { output_bytes: number }>(
    'UPDATE execs SET output_bytes = output_bytes + ? WHERE id = ? RETURNING output_bytes',
  );
  const setBytes = db.prepare<[number, number, string]>(
    'UPDATE execs SET output_bytes = ?, truncated = MAX(truncated, ?) WHERE id = ?',
  );
  const insertChunk = db.prepare<[string, number, string, Buffer, number | null]>(
    'INSERT INTO exec_output (exec_id, seq, stream, data, offset) VALUES (?, ?, ?, ?, ?)',
  );
  const oldestChunk = db.prepare<[string], { seq: number; len: number }>(
    'SELECT seq, length(data) AS len FROM exec_output WHERE exec_id = ? ORDER BY seq LIMIT 1',
  );
  const deleteChunk = db.prepare<[string, number]>('DELETE FROM exec_output WHERE exec_id = ? AND seq = ?');
  const readAfter = db.prepare<[string, number], OutputRow>(
    'SELECT seq, stream, data, offset FROM exec_output WHERE exec_id = ? AND seq > ? ORDER BY seq',
  );

  const updateTx = db.transaction((id: string, patch: Partial<Omit<ExecRecord, 'id' | 'sandboxId'>>) => {
    const row = getById.get(id);
    if (row === undefined) throw execNotFound(id);
    const next = applyPatch(rowToExec(row), patch, ['id', 'sandboxId']);
    update.run(execToRow(next));
    return next;
  });

  const appendTx = db.transaction((execId: string, chunk: ExecOutputChunk, capBytes: number) => {
    const cap = Math.max(0, Math.floor(capBytes));
    let data = chunk.data;
    let offset = chunk.offset ?? null;
    let dropped = false;
    // A single chunk bigger than the cap keeps its tail: the end of the output is what explains a failure.
    if (data.length > cap) {
      if (offset !== null) offset += data.length - cap;
      data = data.subarray(data.length - cap);
      dropped = true;
    }
    const added = addBytes.get(data.length, execId);
    if (added === undefined) throw execNotFound(execId);
    insertChunk.run(execId, chunk.seq, chunk.stream, data, offset);
    // Drop oldest chunks until under the cap: O(chunks dropped), thanks to the running total on execs.
    let total = added.output_bytes;
    while (total > cap) {
      const oldest = oldestChunk.get(execId);
      if (oldest === undefined) break;
      deleteChunk.run(execId, oldest.seq);
      total -= oldest.len;
      dropped = true;
    }
    if (dropped || total !== added.output_bytes) setBytes.run(Math.max(0, total), dropped ? 1 : 0, execId);
  });

  return {
    insertExec(rec) {
      try {
        insert.run(execToRow(rec));
      } catch (e) {
        throw mapSqliteError(e, `insert exec '${rec.id}' for sandbox '${rec.sandboxId}'`, {
          exec: rec.id,
          sandbox: rec.sandboxId,
        });
      }
    },
    getExec(id) {
      const row = getById.get(id);
      return row === undefined ? undefined : rowToExec(row);
    },
    findExecByIdempotencyKey(sandboxId, key) {
      const row = byKey.get(sandboxId, key);
      return row === undefined ? undefined : rowToExec(row);
    },
    listExecs(sandboxId, limit) {
      const n = limit === undefined ? -1 : Math.max(0, Math.floor(limit));
      return listBySandbox.all(sandboxId, n).map(rowToExec);
    },
    updateExec(id, patch) {
      try {
        return updateTx.immediate(id, patch);
      } catch (e) {
        throw mapSqliteError(e, `update exec '${id}'`, { exec: id });
      }
    },
    markRunningExecs(to: ExecState) {
      return markRunning.run(to, now()).changes;
    },
    listLiveExecs(sandboxId) {
      return live.all(sandboxId).map(rowToExec);
    },
    firstExecOutputSeq(execId) {
      return firstSeq.get(execId)?.seq ?? null;
    },
    appendExecOutput(execId, chunk, capBytes) {
      try {
        appendTx.immediate(execId, chunk, capBytes);
      } catch (e) {
        throw mapSqliteError(e, `append output seq ${chunk.seq} to exec '${execId}'`, {
          exec: execId,
          seq: chunk.seq,
        });
      }
    },
    readExecOutput(execId, afterSeq, maxBytes) {
      const out: ExecOutputChunk[] = [];
      let bytes = 0;
      for (const r of readAfter.iterate(execId, afterSeq)) {
        // Pages: at least one chunk, then stop before going over maxBytes.
        if (maxBytes !== undefined && out.length > 0 && bytes + r.data.length > maxBytes) break;
        bytes += r.data.length;
        const c: ExecOutputChunk = {
          seq: r.seq,
          stream: r.stream === 'stderr' ? 'stderr' : 'stdout',
          data: r.data,
        };
        if (r.offset !== null) c.offset = r.offset;
        out.push(c);
      }
      return out;
    },
  };
}
