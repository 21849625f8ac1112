/** Filesystem helpers for the image store: safe removal, atomic metadata writes, python lookup, hashing. */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { ForkboxError } from '../domain/errors.ts';
import { detachMount } from '../util/fs-calls.ts';
import { mountsUnder } from '../util/mountinfo.ts';

/**
 * Remove a tree, first detaching anything mounted inside it. debootstrap bind-mounts host /dev nodes,
 * /proc and /sys into its target; if a build dies mid-way those stay mounted, and a plain recursive delete
 * would reach through them into the host.
 */
export async function removeTree(dir: string): Promise<void> {
  for (const mp of mountsUnder(dir)) {
    try {
      detachMount(mp);
    } catch {
      // Checked below: what is still mounted is reported, with how to find it.
    }
  }
  if (mountsUnder(dir).length > 0)
    throw new ForkboxError(
      'busy',
      `cannot remove ${dir}: something is still mounted inside it. List it with 'findmnt -R ${dir}', unmount it, then retry.`,
      { path: dir },
    );
  await rm(dir, { recursive: true, force: true });
}

/** Write a file atomically: temp file in the same directory, then rename (readers never see half a file). */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const tmp = join(dirname(path), `.${process.pid}.${Date.now()}.${Math.random().toString(36).slice(2)}.tmp`);
  await writeFile(tmp, data, { mode: 0o644, flush: true });
  await rename(tmp, path);
}

export async function sha256File(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** Content key of a directory: a walk of (path, type, size, mode, uid, gid, mtime, link target), sorted. */
export async function hashDirectory(root: string): Promise<string> {
  const h = createHash('sha256');
  const walk = async (rel: string): Promise<void> => {
    const abs = join(root, rel);
    const st = await lstat(abs);
    const type = st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : st.isFile() ? 'f' : 'o';
    const target = st.isSymbolicLink() ? await readlink(abs) : '';
    h.update(
      `${rel}\0${type}\0${st.size}\0${st.mode}\0${st.uid}\0${st.gid}\0${st.mtimeMs}\0${st.rdev}\0${target}\n`,
    );
    if (st.isDirectory())
      for (const name of (await readdir(abs)).sort()) await walk(rel ? `${rel}/${name}` : name);
  };
  await walk('');
  return h.digest('hex');
}

/**
 * Resolve `inside` (an absolute path inside the image) against the layer root, following symlinks as the
 * image would see them — an absolute link target is relative to the layer root, `..` never climbs above it.
 * Returns the host path, or null if it does not resolve to an existing entry.
 */
export async function resolveInRoot(root: string, inside: string): Promise<string | null> {
  let pending = inside.split('/').filter(Boolean);
  const parts: string[] = [];
  let hops = 0;
  while (pending.length > 0) {
    const name = pending.shift() as string;
    if (name === '.') continue;
    if (name === '..') {
      parts.pop();
      continue;
    }
    const host = join(root, ...parts, name);
    let st: Awaited<ReturnType<typeof lstat>>;
    try {
      st = await lstat(host);
    } catch {
      return null;
    }
    if (st.isSymbolicLink()) {
      if (++hops > 40) return null;
      const target = await readlink(host);
      if (target.startsWith('/')) parts.length = 0;
      pending = [...target.split('/').filter(Boolean), ...pending];
      continue;
    }
    parts.push(name);
  }
  return join(root, ...parts);
}

/** The python3 a sandbox of this image would run, as a path inside the image, or null. */
export async function findPython(root: string): Promise<string | null> {
  for (const candidate of ['/usr/bin/python3', '/usr/local/bin/python3', '/bin/python3']) {
    const host = await resolveInRoot(root, candidate);
    if (host === null) continue;
    const st = await lstat(host);
    if (st.isFile() && (st.mode & 0o111) !== 0) return posix.normalize(candidate);
  }
  return null;
}

/** Bytes of regular files under `root`, each inode once (symlinks not followed). */
export async function treeBytes(root: string): Promise<number> {
  const seen = new Set<string>();
  let bytes = 0;
  const dirs = [root];
  while (dirs.length > 0) {
    const d = dirs.pop() as string;
    for (const name of await readdir(d)) {
      const p = join(d, name);
      const st = await lstat(p);
      if (st.isDirectory()) dirs.push(p);
      else if (st.isFile()) {
        const k = `${st.dev}:${st.ino}`;
        if (st.nlink > 1 && seen.has(k)) continue;
        seen.add(k);
        bytes += st.size;
      }
    }
  }
  return bytes;
}
