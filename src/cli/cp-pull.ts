/** `forkbox cp` out of a sandbox: files and directory trees, sparse, snapshot-sized and bounded. */
import { constants as fsConstants } from 'node:fs';
import { type FileHandle, mkdir, open, rm } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { ForkboxError } from '../domain/errors.ts';
import type { ForkboxApi } from '../service/api.ts';

const READ_CHUNK = 8 * 1024 * 1024;
const { O_CREAT, O_NONBLOCK, O_NOCTTY, O_RDONLY, O_TRUNC, O_WRONLY } = fsConstants;
const WRITE_FLAGS = O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_NOCTTY;
export const READ_FLAGS = O_RDONLY | O_NONBLOCK | O_NOCTTY;

/**
 * Open a host file without blocking (a FIFO would block the open or the I/O) and go on only if it is a
 * regular file: a FIFO, socket or device at either end of a copy is refused by name.
 */
export async function openRegular(path: string, flags: number, mode = 0o644): Promise<FileHandle> {
  const fh = await open(path, flags, mode).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ENXIO') throw e; // a FIFO without a reader, opened for writing
    throw new ForkboxError(
      'invalid_argument',
      `${path} on this host is a FIFO, not a regular file; forkbox cp copies regular files and directories only.`,
    );
  });
  const st = await fh.stat();
  if (st.isFile()) return fh;
  await fh.close();
  const what = st.isFIFO()
    ? 'a FIFO'
    : st.isSocket()
      ? 'a socket'
      : st.isDirectory()
        ? 'a directory'
        : 'a device';
  throw new ForkboxError(
    'invalid_argument',
    `${path} on this host is ${what}, not a regular file; forkbox cp copies regular files and directories only.`,
  );
}

export interface Copied {
  files: number;
  dirs: number;
  bytes: number;
  skipped: string[];
  /** Data bytes a copy out may move in all (holes not counted). */
  maxBytes: number;
}

/**
 * Copy one sandbox file to the host: only its data extents (holes stay holes, found by the agent with
 * SEEK_DATA/SEEK_HOLE), up to the size it had when first opened (a file growing meanwhile is copied as
 * it was, not chased), within the copy's byte budget. A FIFO, socket or device is refused by the agent.
 * A copy that fails leaves no partial file behind.
 */
export async function pullFile(
  api: ForkboxApi,
  id: string,
  src: string,
  dst: string,
  mode: number,
  c: Copied,
): Promise<void> {
  const fh = await openRegular(dst, WRITE_FLAGS, mode & 0o777);
  let done = false;
  try {
    let offset = 0;
    let size = -1;
    while (size < 0 || offset < size) {
      const length = size < 0 ? READ_CHUNK : Math.min(READ_CHUNK, size - offset);
      const r = await api.readFile(id, src, { offset, length, sparse: true });
      if (size < 0) size = r.size;
      let at = 0;
      for (const [o, l] of r.extents ?? [[offset, r.data.length] as [number, number]]) {
        const n = Math.max(0, Math.min(l, size - o));
        if (c.bytes + n > c.maxBytes) {
          throw new ForkboxError(
            'too_large',
            `copying ${src} would pass the limit of ${c.maxBytes} bytes copied out of a sandbox in one run (${c.bytes} copied so far; holes of sparse files do not count). Raise it with --max-size, or copy less.`,
            { limit: c.maxBytes },
          );
        }
        if (n > 0) await fh.write(r.data, at, n, o);
        c.bytes += n;
        at += l;
      }
      const next = r.end ?? offset + r.data.length;
      if (next <= offset) break; // truncated meanwhile: nothing more to read
      offset = next;
    }
    await fh.truncate(Math.max(size, 0)); // a trailing hole, as a hole
    c.files++;
    done = true;
  } finally {
    await fh.close();
    if (!done) await rm(dst, { force: true });
  }
}

export async function pullDir(
  api: ForkboxApi,
  id: string,
  src: string,
  dst: string,
  c: Copied,
): Promise<void> {
  await mkdir(dst, { recursive: true });
  c.dirs++;
  const { entries, truncated } = await api.listFiles(id, src, { recursive: true });
  // Parents before children.
  const sorted = [...entries].sort((a, b) => a.path.localeCompare(b.path));
  for (const e of sorted) {
    const rel = posix.relative(src, e.path);
    if (rel === '' || rel.startsWith('..')) continue; // never write outside dst, whatever the listing says
    const to = join(dst, ...rel.split('/'));
    if (e.type === 'dir') {
      await mkdir(to, { recursive: true });
      c.dirs++;
    } else if (e.type === 'file') {
      await mkdir(dirname(to), { recursive: true }); // in case the listing has no entry for the parent
      await pullFile(api, id, e.path, to, e.mode, c);
    } else c.skipped.push(e.path);
  }
  if (truncated) c.skipped.push(`(listing of ${src} was truncated: some files were not copied)`);
}
