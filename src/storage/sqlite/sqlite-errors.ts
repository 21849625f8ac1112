import { ForkboxError, toForkboxError } from '../../domain/errors.ts';

function sqliteCode(e: unknown): string | undefined {
  if (typeof e !== 'object' || e === null || !('code' in e)) return undefined;
  const code = (e as { code: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined;
}

/**
 * Turn a better-sqlite3 error into a ForkboxError with an actionable message. `what` names the operation
 * ("insert sandbox 'sb-1'"). ForkboxErrors pass through unchanged.
 */
export function mapSqliteError(e: unknown, what: string, details?: Record<string, unknown>): ForkboxError {
  if (e instanceof ForkboxError) return e;
  const code = sqliteCode(e);
  const msg = e instanceof Error ? e.message : String(e);
  const opts = { cause: e };
  switch (code) {
    case 'SQLITE_CONSTRAINT_UNIQUE':
    case 'SQLITE_CONSTRAINT_PRIMARYKEY':
      return new ForkboxError(
        'already_exists',
        `cannot ${what}: it already exists (${msg}). Pick another name or id.`,
        details,
        opts,
      );
    case 'SQLITE_CONSTRAINT_FOREIGNKEY':
      return new ForkboxError(
        'conflict',
        `cannot ${what}: it refers to a record that does not exist, or other records still refer to it.`,
        details,
        opts,
      );
    case 'SQLITE_CONSTRAINT_CHECK':
      return new ForkboxError(
        'invalid_argument',
        `cannot ${what}: a value is out of range (${msg}).`,
        details,
        opts,
      );
    case 'SQLITE_BUSY':
    case 'SQLITE_LOCKED':
      return new ForkboxError(
        'busy',
        `cannot ${what}: the database is locked by another process. Is another forkbox daemon using this state dir? Retry, or stop it.`,
        details,
        opts,
      );
    case 'SQLITE_FULL':
      return new ForkboxError(
        'resource_exhausted',
        `cannot ${what}: the disk holding the forkbox database is full. Free space (try 'forkbox gc').`,
        details,
        opts,
      );
    case 'SQLITE_NOTADB':
    case 'SQLITE_CORRUPT':
      return new ForkboxError(
        'unavailable',
        `cannot ${what}: the forkbox database file is not a valid SQLite database (${msg}). Restore it from a backup or move it aside.`,
        details,
        opts,
      );
    case 'SQLITE_READONLY':
    case 'SQLITE_CANTOPEN':
    case 'SQLITE_PERM':
      return new ForkboxError(
        'permission_denied',
        `cannot ${what}: the forkbox database cannot be opened for writing (${msg}). Check the state dir's permissions.`,
        details,
        opts,
      );
    default:
      return toForkboxError(e);
  }
}
