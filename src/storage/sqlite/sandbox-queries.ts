/** Sandbox and template statements, prepared once per store instance. */
import type Database from 'better-sqlite3';
import { errors, ForkboxError } from '../../domain/errors.ts';
import { DEFAULT_NAMESPACE } from '../../domain/namespace.ts';
import { assertTransition, LIVE_STATES } from '../../domain/sandbox-state.ts';
import type { SandboxRecord, SandboxState, TemplateRecord } from '../../domain/types.ts';
import type { SandboxFilter, Store } from '../../service/ports.ts';
import {
  applyPatch,
  rowToSandbox,
  rowToTemplate,
  type SandboxRow,
  sandboxToRow,
  type TemplateRow,
  templateToRow,
} from './rows.ts';
import { mapSqliteError } from './sqlite-errors.ts';

type SandboxMethods = Pick<
  Store,
  | 'insertSandbox'
  | 'getSandbox'
  | 'getSandboxByName'
  | 'listSandboxes'
  | 'listPidNamespaceHolders'
  | 'transitionSandbox'
  | 'updateSandbox'
  | 'deleteSandbox'
>;
type TemplateMethods = Pick<
  Store,
  | 'insertTemplate'
  | 'getTemplate'
  | 'findTemplateByConfigKey'
  | 'listTemplates'
  | 'updateTemplate'
  | 'deleteTemplate'
>;

const LIVE_LIST = LIVE_STATES.map((st) => `'${st}'`).join(', ');

const SANDBOX_COLS =
  'id, name, state, image, template_id, parent_id, depth, limits, env, labels, expires_at, created_at, updated_at, host_pid, runtime, end_reason, tenant, namespace, session, network, ports';
const SANDBOX_VALUES =
  '@id, @name, @state, @image, @template_id, @parent_id, @depth, @limits, @env, @labels, @expires_at, @created_at, @updated_at, @host_pid, @runtime, @end_reason, @tenant, @namespace, @session, @network, @ports';

/**
 * Labels filter in SQL: no wanted (key, value) pair is missing from the row's labels. json_each on both
 * sides avoids building JSON paths from user-supplied keys (keys may contain '.', '"', '[').
 */
const LABELS_MATCH = `(@labels IS NULL OR NOT EXISTS (
  SELECT 1 FROM json_each(@labels) AS want
  WHERE NOT EXISTS (SELECT 1 FROM json_each(s.labels) AS have WHERE have.key = want.key AND have.value = want.value)))`;

const TENANT_MATCH = `(@tenant IS NULL OR s.tenant = @tenant)
  AND (@namespaces IS NULL OR s.namespace IN (SELECT value FROM json_each(@namespaces)))`;

/** Statements whose query plans test/unit/store-retention.test.ts checks (no scan of the history). */
export const SANDBOX_SQL = {
  // INDEXED BY: the planner cannot tell how many rows a json_each list of states selects, and with the
  // statistics of a long history it would rather scan every ended sandbox than look the states up.
  listByStates: `SELECT * FROM sandboxes AS s INDEXED BY sandboxes_state WHERE state IN (SELECT value FROM json_each(@states))
     AND ${LABELS_MATCH} AND ${TENANT_MATCH} ORDER BY created_at, id`,
  getByName: `SELECT * FROM sandboxes WHERE name = ? AND tenant = ? AND namespace = ?
     ORDER BY state IN ('creating', 'running', 'paused', 'killing') DESC, created_at DESC LIMIT 1`,
  listHolders: `SELECT * FROM sandboxes WHERE state IN (${LIVE_LIST})
     UNION ALL SELECT * FROM sandboxes WHERE state = 'killed' AND host_pid IS NOT NULL
     ORDER BY created_at, id`,
} as const;

export function createSandboxQueries(db: Database.Database, now: () => number): SandboxMethods {
  const insert = db.prepare<SandboxRow>(`INSERT INTO sandboxes (${SANDBOX_COLS}) VALUES (${SANDBOX_VALUES})`);
  const getById = db.prepare<[string], SandboxRow>('SELECT * FROM sandboxes WHERE id = ?');
  // A name can be reused once its sandbox has ended: prefer the live one, then the newest.
  const getByName = db.prepare<[string, string, string], SandboxRow>(SANDBOX_SQL.getByName);
  const listAll = db.prepare<
    { labels: string | null; tenant: string | null; namespaces: string | null },
    SandboxRow
  >(`SELECT * FROM sandboxes AS s WHERE ${LABELS_MATCH} AND ${TENANT_MATCH} ORDER BY created_at, id`);
  const listByStates = db.prepare<
    { states: string; labels: string | null; tenant: string | null; namespaces: string | null },
    SandboxRow
  >(SANDBOX_SQL.listByStates);
  // Live (the state index), or killed with a host pid (a tombstone: the partial index of migration 5);
  // neither part scans the ended history.
  const listHolders = db.prepare<[], SandboxRow>(SANDBOX_SQL.listHolders);
  const update = db.prepare<SandboxRow>(
    `UPDATE sandboxes SET name = @name, state = @state, image = @image, template_id = @template_id,
       parent_id = @parent_id, depth = @depth, limits = @limits, env = @env, labels = @labels,
       expires_at = @expires_at, created_at = @created_at, updated_at = @updated_at, host_pid = @host_pid,
       runtime = @runtime, end_reason = @end_reason, tenant = @tenant, namespace = @namespace,
       session = @session, ports = @ports
     WHERE id = @id`,
  );
  const del = db.prepare<[string]>('DELETE FROM sandboxes WHERE id = ?');

  function mustGet(id: string): SandboxRecord {
    const row = getById.get(id);
    if (row === undefined) throw errors.sandboxNotFound(id);
    return rowToSandbox(row);
  }

  function write(next: SandboxRecord, what: string): SandboxRecord {
    try {
      update.run(sandboxToRow(next));
    } catch (e) {
      throw mapSqliteError(e, what, { sandbox: next.id });
    }
    return next;
  }

  function patched(
    cur: SandboxRecord,
    patch: Partial<Omit<SandboxRecord, 'id' | 'state'>>,
    state: SandboxState,
  ): SandboxRecord {
    const next = applyPatch(cur, patch, ['id', 'state']);
    next.state = state;
    // Bump unless the caller set it explicitly; never move it backwards.
    if (patch.updatedAt === undefined) next.updatedAt = Math.max(now(), cur.updatedAt);
    return next;
  }

  const transition = db.transaction(
    (id: string, to: SandboxState, patch: Partial<Omit<SandboxRecord, 'id' | 'state'>>): SandboxRecord => {
      const cur = mustGet(id);
      assertTransition(id, cur.state, to);
      return write(patched(cur, patch, to), `move sandbox '${id}' to ${to}`);
    },
  );
  const updateTx = db.transaction((id: string, patch: Partial<Omit<SandboxRecord, 'id' | 'state'>>) => {
    const cur = mustGet(id);
    return write(patched(cur, patch, cur.state), `update sandbox '${id}'`);
  });

  return {
    insertSandbox(rec) {
      try {
        insert.run(sandboxToRow(rec));
      } catch (e) {
        throw mapSqliteError(e, `insert sandbox '${rec.id}' named '${rec.name}'`, {
          sandbox: rec.id,
          name: rec.name,
        });
      }
    },
    getSandbox(id) {
      const row = getById.get(id);
      return row === undefined ? undefined : rowToSandbox(row);
    },
    getSandboxByName(name, tenant = 'default', namespace = DEFAULT_NAMESPACE) {
      const row = getByName.get(name, tenant, namespace);
      return row === undefined ? undefined : rowToSandbox(row);
    },
    listSandboxes(filter?: SandboxFilter) {
      const labels =
        filter?.labels !== undefined && Object.keys(filter.labels).length > 0
          ? JSON.stringify(filter.labels)
          : null;
      const tenant = filter?.tenant ?? null;
      const namespaces = filter?.namespaces === undefined ? null : JSON.stringify(filter.namespaces);
      const rows =
        filter?.states === undefined
          ? listAll.all({ labels, tenant, namespaces })
          : listByStates.all({ states: JSON.stringify(filter.states), labels, tenant, namespaces });
      return rows
        .map(rowToSandbox)
        .filter((r) => filter?.session === undefined || r.session === filter.session);
    },
    listPidNamespaceHolders() {
      return listHolders.all().map(rowToSandbox);
    },
    // IMMEDIATE: take the write lock before reading the current state, so no other connection can change
    // it between our check and our write (a DEFERRED read-then-write could also fail with SQLITE_BUSY).
    transitionSandbox(id, to, patch = {}) {
      try {
        return transition.immediate(id, to, patch);
      } catch (e) {
        throw mapSqliteError(e, `move sandbox '${id}' to ${to}`, { sandbox: id });
      }
    },
    updateSandbox(id, patch) {
      try {
        return updateTx.immediate(id, patch);
      } catch (e) {
        throw mapSqliteError(e, `update sandbox '${id}'`, { sandbox: id });
      }
    },
    deleteSandbox(id) {
      try {
        del.run(id);
      } catch (e) {
        throw mapSqliteError(e, `delete sandbox '${id}'`, { sandbox: id });
      }
    },
  };
}

export function createTemplateQueries(db: Database.Database): TemplateMethods {
  const insert = db.prepare<TemplateRow>(
    `INSERT INTO templates (id, image, config_key, state, host_pid, created_at, runtime)
     VALUES (@id, @image, @config_key, @state, @host_pid, @created_at, @runtime)`,
  );
  const getById = db.prepare<[string], TemplateRow>('SELECT * FROM templates WHERE id = ?');
  // Several templates can share a config key over time (restarts); prefer a usable one, then the newest.
  const byConfigKey = db.prepare<[string], TemplateRow>(
    `SELECT * FROM templates WHERE config_key = ?
     ORDER BY state IN ('starting', 'running') DESC, created_at DESC LIMIT 1`,
  );
  const listAll = db.prepare<[], TemplateRow>('SELECT * FROM templates ORDER BY created_at, id');
  const update = db.prepare<TemplateRow>(
    `UPDATE templates SET image = @image, config_key = @config_key, state = @state, host_pid = @host_pid,
       created_at = @created_at, runtime = @runtime WHERE id = @id`,
  );
  const del = db.prepare<[string]>('DELETE FROM templates WHERE id = ?');

  const updateTx = db.transaction(
    (id: string, patch: Partial<Omit<TemplateRecord, 'id'>>): TemplateRecord => {
      const row = getById.get(id);
      if (row === undefined) {
        throw new ForkboxError(
          'not_found',
          `no template '${id}'. It may have been removed by 'forkbox gc'.`,
          {
            template: id,
          },
        );
      }
      const next = applyPatch(rowToTemplate(row), patch, ['id']);
      update.run(templateToRow(next));
      return next;
    },
  );

  return {
    insertTemplate(rec) {
      try {
        insert.run(templateToRow(rec));
      } catch (e) {
        throw mapSqliteError(e, `insert template '${rec.id}'`, { template: rec.id });
      }
    },
    getTemplate(id) {
      const row = getById.get(id);
      return row === undefined ? undefined : rowToTemplate(row);
    },
    findTemplateByConfigKey(configKey) {
      const row = byConfigKey.get(configKey);
      return row === undefined ? undefined : rowToTemplate(row);
    },
    listTemplates: () => listAll.all().map(rowToTemplate),
    updateTemplate(id, patch) {
      try {
        return updateTx.immediate(id, patch);
      } catch (e) {
        throw mapSqliteError(e, `update template '${id}'`, { template: id });
      }
    },
    deleteTemplate(id) {
      del.run(id);
    },
  };
}
