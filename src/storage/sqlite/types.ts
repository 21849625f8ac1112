import type { Store } from '../../service/ports.ts';

export type LayerKind = 'image' | 'snapshot' | 'upper';

/** A layer directory tracked for reference counting (deleted when nothing uses it: docs/ARCHITECTURE.md, "Storage drivers"). */
export interface LayerRecord {
  id: string;
  path: string;
  kind: LayerKind;
  /** The layer directly below this one in its overlay chain, if any. */
  parentId: string | null;
  refcount: number;
  createdAt: number;
}

/** The SQLite store: the Store port plus layer bookkeeping used by the storage drivers. */
export interface SqliteStore extends Store {
  /** Schema version of the open database. */
  readonly schemaVersion: number;
  insertLayer(rec: LayerRecord): void;
  getLayer(id: string): LayerRecord | undefined;
  /** Add `delta` (may be negative) to a layer's refcount; returns the new count. Never goes below 0. */
  adjustLayerRefcount(id: string, delta: number): number;
  listLayers(filter?: { kind?: LayerKind; unreferenced?: boolean }): LayerRecord[];
  deleteLayer(id: string): void;
  /**
   * Make the database's disk reserve again if it was used up (disk-reserve.ts) and there is room now; true
   * when it is held. False for a store without one (in memory).
   */
  ensureDiskReserve(): boolean;
}

export interface OpenSqliteStoreOptions {
  /** Database file, normally `<state dir>/forkbox.db`. */
  path: string;
  /** Clock for updatedAt/endedAt stamps (epoch ms); tests inject one. */
  now?: () => number;
  /** Bytes kept free beside the database for writes on a full disk (disk-reserve.ts); 0: none. Default 64 MiB. */
  reserveBytes?: number;
  /** Called when a write on a full disk used the reserve up. */
  onReserveReleased?: () => void;
}
