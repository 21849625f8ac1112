/** `forkbox cp SRC DST`: copy files and directories between the host and a sandbox (`ID:/path`). */
import { lstat, readdir, stat } from 'node:fs/promises';
import { basename, join, posix } from 'node:path';
import type { Command } from 'commander';
import { ForkboxError, isForkboxError } from '../../domain/errors.ts';
import { SIZES } from '../../domain/limits.ts';
import type { ForkboxApi } from '../../service/api.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { type Copied, openRegular, pullDir, pullFile, READ_FLAGS } from '../cp-pull.ts';
import { parseCpOperand, parseSize } from '../parse.ts';

/** Per-request size: one file write is one request body (the local API takes up to 64 MiB). */
const MAX_WRITE = 64 * 1024 * 1024;

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
  const fh = await openRegular(src, READ_FLAGS);
  let data: Buffer;
  let st: Awaited<ReturnType<typeof fh.stat>>;
  try {
    st = await fh.stat();
    if (st.size > MAX_WRITE) {
      throw new ForkboxError(
        'too_large',
        `${src} is ${st.size} bytes; 'forkbox cp' writes files up to ${MAX_WRITE} bytes.`,
      );
    }
    // The size at open: a file growing meanwhile is copied as it was.
    data = Buffer.alloc(st.size);
    let got = 0;
    while (got < st.size) {
      const { bytesRead } = await fh.read(data, got, st.size - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    data = data.subarray(0, got);
  } finally {
    await fh.close();
  }
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
