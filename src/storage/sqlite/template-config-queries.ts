/** Named template configs: an image and the Python modules its template pre-imports. */
import type Database from 'better-sqlite3';
import type { Store, TemplateConfigRecord } from '../../service/ports.ts';
import { mapSqliteError } from './sqlite-errors.ts';

interface TemplateConfigRow {
  name: string;
  image: string;
  prewarm: string;
  pool: number | null;
  created_at: number;
  updated_at: number;
}

function parseModules(text: string): string[] {
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

const fromRow = (r: TemplateConfigRow): TemplateConfigRecord => ({
  name: r.name,
  image: r.image,
  prewarm: parseModules(r.prewarm),
  pool: r.pool,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

type TemplateConfigMethods = Pick<
  Store,
  'putTemplateConfig' | 'getTemplateConfig' | 'listTemplateConfigs' | 'deleteTemplateConfig'
>;

export function createTemplateConfigQueries(db: Database.Database): TemplateConfigMethods {
  // Upsert that keeps the first created_at: redefining a template is an update, not a new one.
  const put = db.prepare<TemplateConfigRow>(
    `INSERT INTO template_configs (name, image, prewarm, pool, created_at, updated_at)
       VALUES (@name, @image, @prewarm, @pool, @created_at, @updated_at)
     ON CONFLICT(name) DO UPDATE SET image = excluded.image, prewarm = excluded.prewarm,
       pool = excluded.pool, updated_at = excluded.updated_at`,
  );
  const byName = db.prepare<[string], TemplateConfigRow>('SELECT * FROM template_configs WHERE name = ?');
  const all = db.prepare<[], TemplateConfigRow>('SELECT * FROM template_configs ORDER BY name');
  const del = db.prepare<[string]>('DELETE FROM template_configs WHERE name = ?');
  return {
    putTemplateConfig(rec) {
      try {
        put.run({
          name: rec.name,
          image: rec.image,
          prewarm: JSON.stringify(rec.prewarm),
          pool: rec.pool ?? null,
          created_at: Math.round(rec.createdAt),
          updated_at: Math.round(rec.updatedAt),
        });
      } catch (e) {
        throw mapSqliteError(e, `save template '${rec.name}'`, { template: rec.name });
      }
    },
    getTemplateConfig: (name) => {
      const r = byName.get(name);
      return r ? fromRow(r) : undefined;
    },
    listTemplateConfigs: () => all.all().map(fromRow),
    deleteTemplateConfig: (name) => del.run(name).changes > 0,
  };
}
