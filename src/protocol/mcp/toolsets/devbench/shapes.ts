/**
 * DevBench's wire shapes and argument style. Every DevBench tool took ONE pydantic argument named
 * `input_data` (FastMCP advertised `{input_data: {…}}`, required), except the seven that took none.
 * Results are the pydantic models FastMCP dumped: every field present, unset ones as null.
 *
 *   FileStat = {path, size, is_dir, permissions ("644"), mtime (ISO 8601), etag, mime_type}
 */
import { z } from 'zod';
import type { FileEntry, FileStat } from '../../../../service/ports.ts';
import { refSchema } from '../../../bounds.ts';
import { mimeOf } from './workspace.ts';

/** `{input_data: {…fields}}`, as FastMCP advertised a tool taking one pydantic model. */
export const inputData = <S extends z.ZodRawShape>(shape: S) => z.object({ input_data: z.object(shape) });

export const containerIdArg = refSchema().describe('Container ID (from spawn, or its alias)');

const mtime = (ms: number) => new Date(ms).toISOString();
const perms = (mode: number) => (mode & 0o777).toString(8);

/** A file as DevBench's FileStat, with `etag` as given. */
function devbenchFile(f: Pick<FileStat, 'path' | 'type' | 'size' | 'mode' | 'mtimeMs'>, etag: string) {
  const isDir = f.type === 'dir';
  return {
    path: f.path,
    size: f.size,
    is_dir: isDir,
    permissions: perms(f.mode),
    mtime: mtime(f.mtimeMs),
    etag,
    mime_type: isDir ? null : mimeOf(f.path),
  };
}

export function devbenchStat(s: FileStat) {
  return devbenchFile(s, s.etag ?? '');
}

/** A listed entry (a listing carries no ETag: fs_stat or fs_read gives it). */
export function devbenchEntry(e: FileEntry) {
  return devbenchFile(e, '');
}
