/** `forkbox cp SRC DST`: copy files and directories between the host and a sandbox (`ID:/path`). */
import { lstat, mkdir, open, readdir, readFile, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, posix } from 'node:path';
import type { Command } from 'commander';
import { ForkboxError, isForkboxError } from '../../domain/errors.ts';
import { SIZES } from '../../domain/limits.ts';
import type { ForkboxApi } from '../../service/api.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { parseCpOperand, parseSize } from '../parse.ts';

/** Per-request size: one file write is one request body (the local API takes up to 64 MiB). */
const MAX_WRITE = 64 * 1024 * 1024;
const READ_CHUNK = 8 * 1024 * 1024;

interface Copied {
  files: number;
  dirs: number;
  bytes: number;
  skipped: string[];
  /** Data bytes a copy out may move in all (holes not counted). */
  maxBytes: number;
}

async function sandboxIsDir(api: ForkboxApi, id: string, path: string): Promise<boolean> {
  try {
    return (await api.statFile(id, path)).type === 'dir';
  } catch (e) {
    if (isForkboxError(e) && e.code === 'not_found') return false;
    throw e;
  }
}

async function hostIsDir(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

async function pushFile(api: ForkboxApi, id: string, src: string, dst: string, c: Copied): Promise<void> {
  const st = await stat(src);
  if (st.size > MAX_WRITE) {
    throw new ForkboxError(
      'too_large',
      `${src} is ${st.size} bytes; 'forkbox cp' writes files up to ${MAX_WRITE} bytes.`,
    );
  }
  const data = await readFile(src);
  await api.writeFile(id, dst, data, { mode: st.mode & 0o7777, createDirs: true });
  c.files++;
  c.bytes += data.length;
}

async function pushDir(api: ForkboxApi, id: string, src: string, dst: string, c: Copied): Promise<void> {
  await ensureSandboxDir(api, id, dst);
  c.dirs++;
  for (const ent of await readdir(src, { withFileTypes: true })) {
    const from = join(src, ent.name);
    const to = posix.join(dst, ent.name);
    if (ent.isDirectory()) await pushDir(api, id, from, to, c);
    else if (ent.isFile()) await pushFile(api, id, from, to, c);
    else c.skipped.push(from); // symlinks, devices, sockets: the file API cannot create them
  }
}

async function ensureSandboxDir(api: ForkboxApi, id: string, path: string): Promise<void> {
  try {
    await api.mkdir(id, path);
  } catch (e) {
    if (!(isForkboxError(e) && e.code === 'already_exists')) throw e;
  }
}

/**
 * Copy one sandbox file to the host: only its data extents (holes stay holes, found by the agent with
 * SEEK_DATA/SEEK_HOLE), up to the size it had when first opened (a file growing meanwhile is copied as
 * it was, not chased), within the copy's byte budget. A FIFO, socket or device is refused by the agent.
 * A copy that fails leaves no partial file behind.
 */
async function pullFile(
  api: ForkboxApi,
  id: string,
  src: string,
  dst: string,
  mode: number,
  c: Copied,
): Promise<void> {
  const fh = await open(dst, 'w', mode & 0o777);
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

async function pullDir(api: ForkboxApi, id: string, src: string, dst: string, c: Copied): Promise<void> {
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

function parseMaxBytes(text: string): number {
  const n = parseSize(text);
  if (!(n >= 1 && n <= SIZES.copyOutMaxBytes)) {
    throw new ForkboxError(
      'invalid_argument',
      `--max-size must be from 1 byte to ${SIZES.copyOutMaxBytes} bytes (e.g. 512m, 20g).`,
    );
  }
  return n;
}

/** Host filesystem errors are the user's to fix, not forkbox bugs: give them a code and the path. */
function hostError(e: unknown): unknown {
  const err = e as NodeJS.ErrnoException;
  if (isForkboxError(e) || typeof err?.code !== 'string') return e;
  const where = err.path ? ` (${err.path})` : '';
  if (err.code === 'ENOENT')
    return new ForkboxError('not_found', `no such file or directory on this host${where}.`);
  if (err.code === 'EACCES' || err.code === 'EPERM') {
    return new ForkboxError('permission_denied', `permission denied on this host${where}.`);
  }
  if (err.code === 'ENOTDIR' || err.code === 'EISDIR' || err.code === 'EEXIST') {
    return new ForkboxError('conflict', `${err.message}. Check the destination path.`);
  }
  return e;
}

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'cp')
    .argument('<src>', 'host path or ID:/path')
    .argument('<dst>', 'host path or ID:/path')
    .option(
      '--max-size <size>',
      `most data copied out of a sandbox in one run (default ${SIZES.copyOutBytes / 1024 ** 3}G; holes not counted)`,
      parseMaxBytes,
    )
    .action(async (srcArg: string, dstArg: string, opts: { maxSize?: number }) => {
      try {
        await copy(srcArg, dstArg, opts.maxSize ?? SIZES.copyOutBytes);
      } catch (e) {
        throw hostError(e);
      }
    });

  async function copy(srcArg: string, dstArg: string, maxBytes: number): Promise<void> {
    const src = parseCpOperand(srcArg);
    const dst = parseCpOperand(dstArg);
    const c: Copied = { files: 0, dirs: 0, bytes: 0, skipped: [], maxBytes };
    if (src.kind === dst.kind) {
      throw new ForkboxError(
        'invalid_argument',
        'exactly one of SRC and DST must be a sandbox path (ID:/path). Copy between sandboxes through the host.',
      );
    }
    const api = await ctx.api();
    if (src.kind === 'host' && dst.kind === 'sandbox') {
      const st = await lstat(src.path);
      let target = dst.path;
      if (dstArg.endsWith('/') || (await sandboxIsDir(api, dst.sandbox, dst.path))) {
        target = posix.join(dst.path, basename(src.path));
      }
      if (st.isDirectory()) await pushDir(api, dst.sandbox, src.path, target, c);
      else await pushFile(api, dst.sandbox, src.path, target, c);
    } else if (src.kind === 'sandbox' && dst.kind === 'host') {
      const st = await api.statFile(src.sandbox, src.path);
      let target = dst.path;
      if (await hostIsDir(dst.path)) target = join(dst.path, posix.basename(src.path) || 'root');
      if (st.type === 'dir') await pullDir(api, src.sandbox, src.path, target, c);
      else await pullFile(api, src.sandbox, src.path, target, st.mode, c);
    }
    for (const s of c.skipped) ctx.out().note(`skipped ${s} (not a regular file or directory)`);
    const { maxBytes: _limit, ...copied } = c;
    ctx.out().result(copied, () => `copied ${c.files} file(s), ${c.dirs} dir(s), ${c.bytes} bytes`);
  }
}
