/** Snapshot records: named frozen states of sandboxes (layer chain + the hidden sandbox holding the REPL). */
import type Database from 'better-sqlite3';
import { ForkboxError } from '../../domain/errors.ts';
import type { SnapshotRecord } from '../../domain/types.ts';
import type { Store } from '../../service/ports.ts';
import { parseArray, parseLimits, parseStringArray, parseStringMap } from './rows.ts';
import { mapSqliteError } from './sqlite-errors.ts';

interface SnapshotRow {
  id: string;
  name: string;
  tenant: string;
  namespace: string;
  source_id: string;
  image: string;
  template_id: string;
  layers: string;
  holder_id: string | null;
  limits: string;
  env: string;
  ports: string;
  created_at: number;
}

function toRow(r: SnapshotRecord): SnapshotRow {
  return {
    id: r.id,
    name: r.name,
    tenant: r.tenant,
    namespace: r.namespace,
    source_id: r.sourceId,
    image: r.image,
    template_id: r.templateId,
    layers: JSON.stringify(r.layers),
    holder_id: r.holderId,
    limits: JSON.stringify(r.limits),
    env: JSON.stringify(r.env),
    ports: JSON.stringify(r.ports),
    created_at: Math.round(r.createdAt),
  };
}

const parsePorts = (text: string): number[] => parseArray(text, (x): x is number => Number.isInteger(x));

function fromRow(r: SnapshotRow): SnapshotRecord {
  return {
    id: r.id,
    name: r.name,
    tenant: r.tenant,
    namespace: r.namespace,
    sourceId: r.source_id,
    image: r.image,
    templateId: r.template_id,
    layers: parseStringArray(r.layers),
    holderId: r.holder_id,
    limits: parseLimits(r.limits),
    env: parseStringMap(r.env),
    ports: parsePorts(r.ports),
    createdAt: r.created_at,
  };
}

type SnapshotMethods = Pick<
  Store,
  | 'insertSnapshot'
  | 'getSnapshot'
  | 'getSnapshotByName'
  | 'listSnapshots'
  | 'updateSnapshot'
  | 'deleteSnapshot'
>;

export function createSnapshotQueries(db: Database.Database): SnapshotMethods {
  const cols =
    'id, name, tenant, namespace, source_id, image, template_id, layers, holder_id, limits, env, ports, created_at';
  const insert = db.prepare<SnapshotRow>(
    `INSERT INTO snapshots (${cols}) VALUES (@id, @name, @tenant, @namespace, @source_id, @image, @template_id, @layers, @holder_id, @limits, @env, @ports, @created_at)`,
  );
  const byId = db.prepare<[string], SnapshotRow>('SELECT * FROM snapshots WHERE id = ?');
  const byName = db.prepare<[string, string], SnapshotRow>(
    'SELECT * FROM snapshots WHERE name = ? AND tenant = ?',
  );
  const all = db.prepare<[], SnapshotRow>('SELECT * FROM snapshots ORDER BY created_at, id');
  const ofTenant = db.prepare<[string], SnapshotRow>(
    'SELECT * FROM snapshots WHERE tenant = ? ORDER BY created_at, id',
  );
  const update = db.prepare<SnapshotRow>(
    `UPDATE snapshots SET name = @name, tenant = @tenant, namespace = @namespace, source_id = @source_id, image = @image, template_id = @template_id,
       layers = @layers, holder_id = @holder_id, limits = @limits, env = @env, ports = @ports, created_at = @created_at WHERE id = @id`,
  );
  const del = db.prepare<[string]>('DELETE FROM snapshots WHERE id = ?');
  return {
    insertSnapshot(rec) {
      try {
        insert.run(toRow(rec));
      } catch (e) {
        throw mapSqliteError(e, `insert snapshot '${rec.name}'`, { snapshot: rec.id });
      }
    },
    getSnapshot: (id) => {
      const r = byId.get(id);
      return r ? fromRow(r) : undefined;
    },
    getSnapshotByName: (name, tenant) => {
      const r = byName.get(name, tenant);
      return r ? fromRow(r) : undefined;
    },
    listSnapshots: (tenant) => (tenant === undefined ? all.all() : ofTenant.all(tenant)).map(fromRow),
    updateSnapshot(id, patch) {
      const cur = byId.get(id);
      if (!cur)
        throw new ForkboxError('not_found', `no snapshot '${id}'. List them with 'forkbox snapshot ls'.`);
      const next = { ...fromRow(cur), ...patch, id };
      update.run(toRow(next));
      return next;
    },
    deleteSnapshot(id) {
      del.run(id);
    },
  };
}
