/**
 * Versioned schema migrations. Append-only: never edit a migration that has shipped — add a new one.
 * Each migration runs in its own IMMEDIATE transaction together with its schema_migrations row, so a crash
 * mid-migration leaves the database at the previous version, never half-migrated.
 */
import type Database from 'better-sqlite3';
import { ForkboxError } from '../../domain/errors.ts';

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /**
   * Run before the transaction that applies `sql`, for statements SQLite refuses inside one (VACUUM).
   * Must be safe to run again: a crash between it and the version row re-runs it at the next open.
   */
  outsideTransaction?: (db: Database.Database) => void;
}

/** States of an ended sandbox, frozen into migration 7's trigger and indexes (as literals, like migration 1's). */
export const MIGRATION_7_ENDED_STATES = ['killed', 'failed', 'lost'] as const;
const endedList = MIGRATION_7_ENDED_STATES.map((s) => `'${s}'`).join(', ');

/**
 * Live states frozen into migration 1's partial unique index. Deliberately a literal, not LIVE_STATES:
 * a shipped migration must not change when the domain module does (a test checks they still agree; if
 * LIVE_STATES changes, add a migration that recreates the index).
 */
export const MIGRATION_1_LIVE_STATES = ['creating', 'running', 'paused', 'killing'] as const;

const liveList = MIGRATION_1_LIVE_STATES.map((s) => `'${s}'`).join(', ');

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial',
    sql: `
CREATE TABLE templates (
  id          TEXT PRIMARY KEY,
  image       TEXT NOT NULL,
  config_key  TEXT NOT NULL,
  state       TEXT NOT NULL,
  host_pid    INTEGER,
  created_at  INTEGER NOT NULL,
  runtime     TEXT NOT NULL DEFAULT '{}'
) STRICT;
CREATE INDEX templates_config_key ON templates(config_key);

CREATE TABLE sandboxes (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  state       TEXT NOT NULL,
  image       TEXT NOT NULL,
  template_id TEXT NOT NULL,
  parent_id   TEXT,
  depth       INTEGER NOT NULL DEFAULT 0,
  limits      TEXT NOT NULL,
  env         TEXT NOT NULL DEFAULT '{}',
  labels      TEXT NOT NULL DEFAULT '{}',
  expires_at  INTEGER,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  host_pid    INTEGER,
  runtime     TEXT NOT NULL DEFAULT '{}',
  end_reason  TEXT
) STRICT;
CREATE INDEX sandboxes_state ON sandboxes(state);
CREATE INDEX sandboxes_parent ON sandboxes(parent_id);
-- Backstop for the service's own check: two live sandboxes can never share a name, even if two requests race.
CREATE UNIQUE INDEX sandboxes_live_name ON sandboxes(name) WHERE state IN (${liveList});

CREATE TABLE execs (
  id              TEXT PRIMARY KEY,
  sandbox_id      TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
  idempotency_key TEXT,
  command         TEXT NOT NULL,
  state           TEXT NOT NULL,
  exit_code       INTEGER,
  signal          INTEGER,
  timed_out       INTEGER NOT NULL DEFAULT 0,
  truncated       INTEGER NOT NULL DEFAULT 0,
  oom_killed      INTEGER NOT NULL DEFAULT 0,
  started_at      INTEGER NOT NULL,
  ended_at        INTEGER,
  -- Running total of exec_output bytes kept for this exec, so the cap needs no SUM() per append.
  output_bytes    INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX execs_sandbox ON execs(sandbox_id, started_at);
CREATE INDEX execs_state ON execs(state);
CREATE UNIQUE INDEX execs_idempotency ON execs(sandbox_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE exec_output (
  exec_id TEXT NOT NULL REFERENCES execs(id) ON DELETE CASCADE,
  seq     INTEGER NOT NULL,
  stream  TEXT NOT NULL CHECK (stream IN ('stdout', 'stderr')),
  data    BLOB NOT NULL,
  PRIMARY KEY (exec_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE layers (
  id         TEXT PRIMARY KEY,
  path       TEXT NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('image', 'snapshot', 'upper')),
  -- A layer's parent must exist while it does (its overlay lowerdir chain needs it): no cascade.
  parent_id  TEXT REFERENCES layers(id),
  refcount   INTEGER NOT NULL DEFAULT 0 CHECK (refcount >= 0),
  created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX layers_parent ON layers(parent_id);
`,
  },
  {
    version: 2,
    name: 'tenants and sessions',
    sql: `
ALTER TABLE sandboxes ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
ALTER TABLE sandboxes ADD COLUMN session TEXT;
-- Names are unique among a tenant's live sandboxes (was: among all live sandboxes).
DROP INDEX sandboxes_live_name;
CREATE UNIQUE INDEX sandboxes_live_tenant_name ON sandboxes(tenant, name) WHERE state IN (${liveList});
CREATE INDEX sandboxes_session ON sandboxes(session) WHERE session IS NOT NULL;
`,
  },
  {
    version: 3,
    name: 'snapshots',
    sql: `
CREATE TABLE snapshots (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  tenant      TEXT NOT NULL,
  source_id   TEXT NOT NULL,
  image       TEXT NOT NULL,
  template_id TEXT NOT NULL,
  layers      TEXT NOT NULL,
  holder_id   TEXT,
  limits      TEXT NOT NULL,
  env         TEXT NOT NULL DEFAULT '{}',
  created_at  INTEGER NOT NULL
) STRICT;
CREATE UNIQUE INDEX snapshots_tenant_name ON snapshots(tenant, name);
`,
  },
  {
    version: 4,
    name: 'template configs',
    sql: `
-- Named template configs (image + modules to pre-import). The built-in 'default' is not stored.
CREATE TABLE template_configs (
  name       TEXT PRIMARY KEY,
  image      TEXT NOT NULL,
  prewarm    TEXT NOT NULL DEFAULT '[]',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;
`,
  },
  {
    version: 5,
    name: 'pid-namespace holders',
    sql: `
-- Killed sandboxes that still hold a host pid are tombstones (their PID 1 waits for descendants). Every
-- kill asks for them; without this index that was a scan of the whole sandbox history.
CREATE INDEX sandboxes_tombstones ON sandboxes(state) WHERE host_pid IS NOT NULL;
`,
  },
  {
    version: 6,
    name: 'exec process trees and bounded output',
    sql: `
-- Processes an exec left running when it ended, and the runtime's name for its process tree (cgroup).
ALTER TABLE execs ADD COLUMN leftovers INTEGER NOT NULL DEFAULT 0;
ALTER TABLE execs ADD COLUMN tree TEXT;
-- JSON {stdout, stderr} stream summaries (totals, spool file) once the exec ended.
ALTER TABLE execs ADD COLUMN streams TEXT;
-- Position of a chunk's first byte in its stream: a poller sees every gap exactly.
ALTER TABLE exec_output ADD COLUMN offset INTEGER;
-- Execs whose processes may still run (running, or ended with processes left): recovery and kills ask.
CREATE INDEX execs_live ON execs(sandbox_id) WHERE state = 'running' OR tree IS NOT NULL;
`,
  },
  {
    version: 7,
    name: 'retention',
    sql: `
-- Status counts per state come from this index alone (GROUP BY state), whatever the history's size.
CREATE INDEX sandboxes_tenant_state ON sandboxes(tenant, state);
-- A name resolves among all of a tenant's sandboxes (the live-name index covers live ones only).
CREATE INDEX sandboxes_tenant_name ON sandboxes(tenant, name, created_at);
-- Retention: ended sandboxes by when they ended (updated_at is set by the transition that ended them).
CREATE INDEX sandboxes_ended ON sandboxes(updated_at) WHERE state IN (${endedList});
-- Sandboxes that ended with exec output still stored: the retention sweep empties them in small batches,
-- so a kill never holds the database for the time it takes to delete a gigabyte of output.
CREATE TABLE output_drops (sandbox_id TEXT PRIMARY KEY) STRICT, WITHOUT ROWID;
CREATE TRIGGER sandboxes_ended_drop_output AFTER UPDATE OF state ON sandboxes
  WHEN NEW.state IN (${endedList}) AND OLD.state NOT IN (${endedList})
  BEGIN INSERT OR IGNORE INTO output_drops (sandbox_id) VALUES (NEW.id); END;
INSERT OR IGNORE INTO output_drops (sandbox_id)
  SELECT DISTINCT e.sandbox_id FROM execs AS e JOIN sandboxes AS s ON s.id = e.sandbox_id
  WHERE s.state IN (${endedList}) AND e.output_bytes > 0;
`,
  },
  {
    version: 8,
    name: 'incremental vacuum',
    sql: '',
    // Pages freed by prunes go back to the filesystem (PRAGMA incremental_vacuum after each sweep). The
    // mode of an existing database only changes with a VACUUM (once, at this upgrade); new databases get
    // it before their first table (configure() in open-sqlite-store.ts).
    outsideTransaction(db) {
      if (db.pragma('auto_vacuum', { simple: true }) === 2) return;
      db.pragma('auto_vacuum = INCREMENTAL');
      db.exec('VACUUM');
    },
  },
  {
    version: 9,
    name: 'sandbox network policy',
    // The wire form of domain/network.ts; sandboxes made before it had loopback only: 'none'.
    sql: "ALTER TABLE sandboxes ADD COLUMN network TEXT NOT NULL DEFAULT 'none';",
  },
  {
    version: 10,
    name: 'sandbox published ports',
    // JSON [{port, hostPort}]: re-opened on the same host ports after a daemon restart.
    sql: "ALTER TABLE sandboxes ADD COLUMN ports TEXT NOT NULL DEFAULT '[]';",
  },
  {
    version: 11,
    name: 'sandbox namespaces',
    sql: `
-- Every sandbox lives in a namespace of its tenant; those made before are in 'default'.
ALTER TABLE sandboxes ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
-- Names are unique among the live sandboxes of a tenant's namespace (was: of a tenant).
DROP INDEX sandboxes_live_tenant_name;
CREATE UNIQUE INDEX sandboxes_live_ns_name ON sandboxes(tenant, namespace, name) WHERE state IN (${liveList});
-- A name resolves within a namespace among all its sandboxes (migration 7's index, with the namespace).
DROP INDEX sandboxes_tenant_name;
CREATE INDEX sandboxes_tenant_ns_name ON sandboxes(tenant, namespace, name, created_at);
`,
  },
  {
    version: 12,
    name: 'snapshot published ports',
    // JSON [port, …]: the source's published ports, which a restored sandbox publishes on host ports of its own.
    sql: "ALTER TABLE snapshots ADD COLUMN ports TEXT NOT NULL DEFAULT '[]';",
  },
  {
    version: 13,
    name: 'template warm pool size',
    // NULL: the daemon's --pool default; a number: this template's own (0 = no pool).
    sql: 'ALTER TABLE template_configs ADD COLUMN pool INTEGER;',
  },
  {
    version: 14,
    name: 'snapshot namespaces',
    // A snapshot lives in its source's namespace: a token limited to namespaces sees only theirs.
    sql: `
ALTER TABLE snapshots ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
UPDATE snapshots SET namespace = COALESCE(
  (SELECT namespace FROM sandboxes WHERE sandboxes.id = snapshots.source_id), 'default');
`,
  },
];

export const LATEST_SCHEMA_VERSION = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);

const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER PRIMARY KEY,
  applied_at INTEGER NOT NULL
)`;

export function currentSchemaVersion(db: Database.Database): number {
  const row = db.prepare<[], { v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations').get();
  return row?.v ?? 0;
}

function refuseNewer(path: string, version: number, supported: number): ForkboxError {
  return new ForkboxError(
    'conflict',
    `the database ${path} has schema version ${version}, but this forkbox only knows up to version ${supported}. ` +
      'It was written by a newer forkbox: upgrade forkbox (do not downgrade a state dir).',
    { path, version, supported },
  );
}

/** Bring the database up to LATEST_SCHEMA_VERSION; refuse one written by a newer forkbox. Returns the version. */
export function applyMigrations(
  db: Database.Database,
  path: string,
  now: () => number,
  migrations: readonly Migration[] = MIGRATIONS,
): number {
  db.exec(CREATE_MIGRATIONS_TABLE);
  const latest = migrations.reduce((max, m) => Math.max(max, m.version), 0);
  const before = currentSchemaVersion(db);
  if (before > latest) throw refuseNewer(path, before, latest);

  const record = db.prepare<[number, number]>(
    'INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)',
  );
  const sorted = [...migrations].sort((a, b) => a.version - b.version);
  for (const m of sorted) {
    // IMMEDIATE takes the write lock before re-reading the version, so two processes opening the same
    // fresh file cannot both apply a migration (the loser sees the new version and skips it).
    if (m.outsideTransaction && currentSchemaVersion(db) < m.version) m.outsideTransaction(db);
    db.transaction(() => {
      if (currentSchemaVersion(db) >= m.version) return;
      db.exec(m.sql);
      record.run(m.version, now());
    }).immediate();
  }
  return currentSchemaVersion(db);
}
