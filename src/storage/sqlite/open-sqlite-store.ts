import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { ForkboxError } from '../../domain/errors.ts';
import { createDiskReserve, type DiskReserve } from './disk-reserve.ts';
import { createExecQueries } from './exec-queries.ts';
import { createLayerQueries } from './layer-queries.ts';
import { applyMigrations } from './migrations.ts';
import { createRetentionQueries } from './retention-queries.ts';
import { createSandboxQueries, createTemplateQueries } from './sandbox-queries.ts';
import { createSnapshotQueries } from './snapshot-queries.ts';
import { mapSqliteError } from './sqlite-errors.ts';
import { createTemplateConfigQueries } from './template-config-queries.ts';
import type { OpenSqliteStoreOptions, SqliteStore } from './types.ts';

/**
 * The database holds sandbox env vars and labels (which may carry secrets): only root may read it.
 * SQLite creates the -wal and -shm files with the main file's mode, so creating the main file 0600 before
 * SQLite opens it covers all three; existing files are tightened too (an older or hand-made file).
 */
function prepareFile(path: string): void {
  // 0700: other local users must not even list the state dir (sandbox names, socket paths).
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  closeSync(openSync(path, 'a', 0o600));
  for (const p of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(p)) chmodSync(p, 0o600);
}

function configure(db: Database.Database, path: string): void {
  // Set first, so that switching the journal mode below also waits for another process's lock.
  db.pragma('busy_timeout = 5000');
  // Only takes effect on a database with no table yet (a new one); migration 8 converts older ones.
  db.pragma('auto_vacuum = INCREMENTAL');
  // WAL: readers (the CLI, a second connection) never block the daemon's writes, and vice versa.
  const mode = db.pragma('journal_mode = WAL', { simple: true });
  if (mode !== 'wal' && path !== ':memory:') {
    throw new ForkboxError(
      'requirement_missing',
      `the filesystem holding ${path} does not support SQLite WAL mode (got '${String(mode)}'). ` +
        'Put the forkbox state dir on a local filesystem (not NFS/SMB).',
      { path, journalMode: mode },
    );
  }
  // NORMAL in WAL mode: a commit survives a process crash (kill -9 of the daemon); only an OS crash or
  // power loss can lose the last few commits, never corrupt the file. FULL would fsync every commit.
  db.pragma('synchronous = NORMAL');
  // Off by default in SQLite: without it, ON DELETE CASCADE (execs, output) and layer parent checks are ignored.
  db.pragma('foreign_keys = ON');
}

/** Open (creating if needed) the SQLite store at `opts.path`, migrating it to the current schema. */
export function openSqliteStore(opts: OpenSqliteStoreOptions): SqliteStore {
  const { path } = opts;
  const now = opts.now ?? Date.now;
  const inMemory = path === ':memory:';

  let db: Database.Database;
  try {
    if (!inMemory) prepareFile(path);
    db = new Database(path, { timeout: 5000 });
  } catch (e) {
    throw mapSqliteError(e, `open the forkbox database ${path}`, { path });
  }

  let schemaVersion: number;
  try {
    configure(db, path);
    schemaVersion = applyMigrations(db, path, now);
  } catch (e) {
    db.close();
    throw mapSqliteError(e, `open the forkbox database ${path}`, { path });
  }

  const reserve =
    inMemory || opts.reserveBytes === 0
      ? null
      : createDiskReserve(join(dirname(path), 'db-reserve'), opts.reserveBytes);
  reserve?.ensure();
  const store: SqliteStore = {
    schemaVersion,
    ...createSandboxQueries(db, now),
    ...createTemplateQueries(db),
    ...createExecQueries(db, now),
    ...createLayerQueries(db),
    ...createSnapshotQueries(db),
    ...createTemplateConfigQueries(db),
    ...createRetentionQueries(db),
    atomically<T>(fn: () => T): T {
      try {
        return db.transaction(fn).immediate();
      } catch (e) {
        throw mapSqliteError(e, 'write several records at once');
      }
    },
    ensureDiskReserve: () => reserve?.ensure() ?? false,
    close() {
      // Idempotent: shutdown paths may close twice (signal handler + normal exit).
      if (db.open) db.close();
    },
  };
  return reserve ? retriedOnFullDisk(store, db, reserve, opts.onReserveReleased) : store;
}

function isDiskFull(e: unknown): boolean {
  for (let c: unknown = e; typeof c === 'object' && c !== null; c = (c as { cause?: unknown }).cause) {
    if ((c as { code?: unknown }).code === 'SQLITE_FULL') return true;
  }
  return false;
}

/**
 * Every method of `store`, tried once more after deleting the reserve when it fails on a full disk. Only
 * outside a transaction: SQLite rolls a failed statement (or its transaction) back, so the outermost call
 * — a single statement, or all of an `atomically` — is what runs again.
 */
function retriedOnFullDisk(
  store: SqliteStore,
  db: Database.Database,
  reserve: DiskReserve,
  onReleased: (() => void) | undefined,
): SqliteStore {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(store)) {
    if (typeof value !== 'function' || key === 'close') {
      out[key] = value;
      continue;
    }
    const fn = value as (...args: unknown[]) => unknown;
    out[key] = (...args: unknown[]) => {
      try {
        return fn(...args);
      } catch (e) {
        if (db.inTransaction || !isDiskFull(e) || !reserve.release()) throw e;
        onReleased?.();
        return fn(...args);
      }
    };
  }
  return out as unknown as SqliteStore;
}
