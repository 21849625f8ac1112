/**
 * Reading and writing files of a native sandbox over its agent connection, in frames of at most 8 MiB
 * (the protocol's body limit is 16 MiB). Every read is bounded: by the caller's length, else by
 * SIZES.fileBytes (past it: `too_large`), and never past the size the file had when first opened. A
 * conditional write (`ifMatch`) is one agent operation: the ETag compare and the write happen together.
 */
import { randomBytes } from 'node:crypto';
import { ForkboxError } from '../../../domain/errors.ts';
import { SIZES } from '../../../domain/limits.ts';
import type { FileRead, FileReadOptions, FileWriteOptions, FileWritten } from '../../../service/ports.ts';
import type { AgentConnection } from './agent-connection.ts';

/** Bytes per agent frame. */
export const CHUNK = 8 * 1024 * 1024;

const num = (v: unknown, d = 0): number => (typeof v === 'number' ? v : d);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function extentsOf(v: unknown): [number, number][] {
  if (!Array.isArray(v)) return [];
  return v.filter(
    (e): e is [number, number] => Array.isArray(e) && typeof e[0] === 'number' && typeof e[1] === 'number',
  );
}

export async function readFileOver(
  c: AgentConnection,
  path: string,
  opts: FileReadOptions = {},
): Promise<FileRead> {
  const start = opts.offset ?? 0;
  const want = opts.length ?? SIZES.fileBytes;
  const first = await c.request('file.read', {
    path,
    offset: start,
    length: Math.min(CHUNK, want),
    sparse: opts.sparse === true,
  });
  const size = num(first.result.size);
  const etag = str(first.result.etag);
  if (opts.sparse === true) {
    // One frame's worth: the caller (forkbox cp) continues from `end`.
    return {
      data: first.body,
      size,
      etag,
      extents: extentsOf(first.result.extents),
      end: num(first.result.end, start + first.body.length),
    };
  }
  // The size at the first open bounds the whole read: a file growing meanwhile is not chased.
  const stop = Math.min(start + want, Math.max(size, start));
  if (opts.length === undefined && size - start > SIZES.fileBytes) {
    throw new ForkboxError(
      'too_large',
      `${path} has ${size - start} bytes from offset ${start}, over the ${SIZES.fileBytes}-byte limit of one read; read it in parts with offset and length.`,
      { limit: SIZES.fileBytes, size },
    );
  }
  const parts: Buffer[] = [first.body];
  let offset = start + first.body.length;
  let eof = first.result.eof === true || first.body.length === 0;
  while (!eof && offset < stop) {
    const { result, body } = await c.request('file.read', {
      path,
      offset,
      length: Math.min(CHUNK, stop - offset),
    });
    parts.push(body);
    offset += body.length;
    eof = result.eof === true || body.length === 0;
  }
  return { data: Buffer.concat(parts), size, etag };
}

export async function writeFileOver(
  c: AgentConnection,
  path: string,
  data: Buffer,
  opts: FileWriteOptions = {},
): Promise<FileWritten> {
  const args = { mode: opts.mode ?? 0o644, create_dirs: opts.createDirs === true };
  const cond = opts.ifMatch === undefined ? {} : { if_match: opts.ifMatch };
  const inPlace = opts.append === true || opts.offset !== undefined;
  if (data.length <= CHUNK || inPlace) {
    // In place, bigger than a frame: one conditional first chunk, then the rest after it.
    let written: FileWritten = { size: 0, etag: '' };
    let at = opts.offset;
    for (let off = 0; off === 0 || off < data.length; off += CHUNK) {
      const part = data.subarray(off, off + CHUNK);
      const where = at === undefined ? { append: opts.append === true } : { offset: at };
      const a = { path, ...args, ...where, ...(off === 0 ? cond : {}) };
      const { result } = await c.request('file.write', a, { body: part });
      written = { size: num(result.size), etag: str(result.etag) };
      if (at !== undefined) at += part.length;
    }
    return written;
  }
  // Larger than one frame: chunks go to a temp file beside the target (each later chunk opened
  // O_NOFOLLOW|O_NONBLOCK and checked to be a regular file by the agent), then one move checks
  // `ifMatch` and renames it over the target, so readers never see a half-written file.
  const slash = path.lastIndexOf('/');
  const tmp = `${path.slice(0, slash + 1)}.forkbox-upload-${randomBytes(6).toString('hex')}`;
  try {
    for (let off = 0; off < data.length; off += CHUNK) {
      await c.request(
        'file.write',
        { path: tmp, ...args, append: off > 0 },
        { body: data.subarray(off, off + CHUNK) },
      );
    }
    const moved = await c.request('file.move', {
      from: tmp,
      to: path,
      overwrite: true,
      regular: true,
      ...cond,
    });
    return { size: data.length, etag: str(moved.result.etag) };
  } catch (e) {
    await c.request('file.delete', { path: tmp }).catch(() => undefined);
    throw e;
  }
}
