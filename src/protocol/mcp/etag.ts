/**
 * ETags for optimistic concurrency on file writes: a hash of the file's content, so a write with
 * `if_match` fails when anything (another tool call, a command in the sandbox) changed the file since
 * the caller read it. Content-based rather than mtime-based: mtimes have coarse resolution and can be
 * set by any process in the sandbox.
 */
import { createHash } from 'node:crypto';
import { isForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi } from '../../service/api.ts';
import { toolFailure } from './errors.ts';

export function etagOf(data: Buffer): string {
  return `sha256-${createHash('sha256').update(data).digest('hex').slice(0, 32)}`;
}

/** The current content's ETag, or null when the file does not exist. */
export async function currentEtag(api: ForkboxApi, sandbox: string, path: string): Promise<string | null> {
  try {
    return etagOf((await api.readFile(sandbox, path)).data);
  } catch (e) {
    if (isForkboxError(e) && e.code === 'not_found') return null;
    throw e;
  }
}

/** Throw the tool error for an `if_match` that does not match the file as it is now. */
export async function checkIfMatch(
  api: ForkboxApi,
  sandbox: string,
  path: string,
  ifMatch: string | undefined,
): Promise<void> {
  if (ifMatch === undefined) return;
  const now = await currentEtag(api, sandbox, path);
  if (now === ifMatch) return;
  toolFailure(
    'conflict',
    now === null
      ? `${path} no longer exists (if_match ${ifMatch} was given). Re-read the directory with file_list, then decide again.`
      : `${path} changed since you read it (if_match ${ifMatch}, current etag ${now}). Re-read it with file_read and apply your change to the current content.`,
  );
}
