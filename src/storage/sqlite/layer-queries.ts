/** Layer bookkeeping (refcounts), prepared once per store instance. */
import type Database from 'better-sqlite3';
import { ForkboxError } from '../../domain/errors.ts';
import { type LayerRow, layerToRow, rowToLayer } from './rows.ts';
import { mapSqliteError } from './sqlite-errors.ts';
import type { SqliteStore } from './types.ts';

type LayerMethods = Pick<
  SqliteStore,
  'insertLayer' | 'getLayer' | 'adjustLayerRefcount' | 'listLayers' | 'deleteLayer'
>;

function layerNotFound(id: string): ForkboxError {
  return new ForkboxError('not_found', `no layer '${id}'. Run 'forkbox gc' to reconcile layers on disk.`, {
    layer: id,
  });
}

export function createLayerQueries(db: Database.Database): LayerMethods {
  const insert = db.prepare<LayerRow>(
    `INSERT INTO layers (id, path, kind, parent_id, refcount, created_at)
     VALUES (@id, @path, @kind, @parent_id, @refcount, @created_at)`,
  );
  const getById = db.prepare<[string], LayerRow>('SELECT * FROM layers WHERE id = ?');
  const adjust = db.prepare<[number, string], { refcount: number }>(
    'UPDATE layers SET refcount = refcount + ? WHERE id = ? RETURNING refcount',
  );
  const list = db.prepare<{ kind: string | null; unreferenced: number }, LayerRow>(
    `SELECT * FROM layers WHERE (@kind IS NULL OR kind = @kind) AND (@unreferenced = 0 OR refcount = 0)
     ORDER BY created_at, id`,
  );
  const del = db.prepare<[string]>('DELETE FROM layers WHERE id = ?');

  return {
    insertLayer(rec) {
      try {
        insert.run(layerToRow(rec));
      } catch (e) {
        throw mapSqliteError(e, `insert layer '${rec.id}'`, { layer: rec.id, parent: rec.parentId });
      }
    },
    getLayer(id) {
      const row = getById.get(id);
      return row === undefined ? undefined : rowToLayer(row);
    },
    adjustLayerRefcount(id, delta) {
      let row: { refcount: number } | undefined;
      try {
        // One statement, so atomic without an explicit transaction; the CHECK (refcount >= 0) refuses
        // an underflow, which would otherwise let gc delete a layer that is still mounted somewhere.
        row = adjust.get(Math.trunc(delta), id);
      } catch (e) {
        const err = mapSqliteError(e, `change the refcount of layer '${id}' by ${delta}`, {
          layer: id,
          delta,
        });
        if (err.code !== 'invalid_argument') throw err;
        throw new ForkboxError(
          'internal',
          `layer '${id}' refcount would drop below zero (delta ${delta}). This is a forkbox bug; please report it.`,
          { layer: id, delta },
          { cause: e },
        );
      }
      if (row === undefined) throw layerNotFound(id);
      return row.refcount;
    },
    listLayers(filter) {
      return list
        .all({ kind: filter?.kind ?? null, unreferenced: filter?.unreferenced === true ? 1 : 0 })
        .map(rowToLayer);
    },
    deleteLayer(id) {
      try {
        del.run(id);
      } catch (e) {
        throw mapSqliteError(e, `delete layer '${id}' (other layers are built on it; delete them first)`, {
          layer: id,
        });
      }
    },
  };
}
