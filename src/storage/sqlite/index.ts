export { LATEST_SCHEMA_VERSION, MIGRATIONS, type Migration } from './migrations.ts';
export { openSqliteStore } from './open-sqlite-store.ts';
export type { LayerKind, LayerRecord, OpenSqliteStoreOptions, SqliteStore } from './types.ts';
