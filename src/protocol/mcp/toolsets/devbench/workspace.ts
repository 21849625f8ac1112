/**
 * DevBench's workspace rule: every fs_* path is under /workspace (a relative path is taken from it),
 * normalised, with no `..` left, and the root itself cannot be deleted. forkbox keeps the rule (a
 * DevBench agent relies on it) on top of its own: the agent never follows a path out of the sandbox.
 */
import { posix } from 'node:path';
import { ForkboxError } from '../../../../domain/errors.ts';

export const WORKSPACE = '/workspace';

export function workspacePath(path: string): string {
  const abs = path.startsWith('/') ? path : posix.join(WORKSPACE, path);
  const n = posix.normalize(abs);
  if ((n !== WORKSPACE && !n.startsWith(`${WORKSPACE}/`)) || n.split('/').includes('..')) {
    throw new ForkboxError(
      'invalid_argument',
      `Path security violation for '${path.slice(0, 200)}': Path must be under ${WORKSPACE}. Give a path in ${WORKSPACE}.`,
    );
  }
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

const MIME: Readonly<Record<string, string>> = {
  '.py': 'text/x-python',
  '.txt': 'text/plain',
  '.md': 'text/markdown',
  '.json': 'application/json',
  '.js': 'text/javascript',
  '.ts': 'text/x-typescript',
  '.html': 'text/html',
  '.css': 'text/css',
  '.csv': 'text/csv',
  '.xml': 'application/xml',
  '.yaml': 'application/yaml',
  '.yml': 'application/yaml',
  '.sh': 'application/x-sh',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.svg': 'image/svg+xml',
  '.pdf': 'application/pdf',
  '.zip': 'application/zip',
  '.tar': 'application/x-tar',
  '.gz': 'application/gzip',
};

/** The MIME type guessed from the name, as DevBench's `mimetypes.guess_type` did; null when unknown. */
export const mimeOf = (path: string): string | null => MIME[posix.extname(path).toLowerCase()] ?? null;
