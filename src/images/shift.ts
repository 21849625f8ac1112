/**
 * uid shifting of a layer tree: container id N becomes host id hostStart + N (the ids layers are stored
 * with), done once at import; every sandbox sees them through an idmap as ids of its own block of host
 * uids (runtimes/native/host/userns-maker.ts). Device nodes are dropped on the way (docs/IMAGES.md).
 */
import type { Stats } from 'node:fs';
import { chmod, lchown, lstat, readdir, unlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  ACL_ACCESS,
  ACL_DEFAULT,
  CAP_XATTR,
  idTooLarge,
  readXattrsTree,
  shiftAcl,
  shiftCapability,
  writeXattrs,
} from './xattr.ts';

export interface UidShift {
  hostStart: number;
  size: number;
}

interface Entry {
  path: string;
  uid: number;
  gid: number;
  mode: number;
  symlink: boolean;
}

/** How many entries of one directory are lstat'ed/chowned concurrently. */
const BATCH = 64;

async function inBatches<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += BATCH) await Promise.all(items.slice(i, i + BATCH).map(fn));
}

/**
 * A device node, not an overlay whiteout (a character device 0:0): never kept in a layer. Overlay's copy-up
 * would make a real device of it in an upper on the host, where whoever reached it could open it.
 */
export function isDeviceNode(st: Stats): boolean {
  return st.isBlockDevice() || (st.isCharacterDevice() && st.rdev !== 0);
}

/**
 * Walk `dir` without following symlinks; one entry per inode (hardlinks are shifted once: shifting the
 * second name again would shift the shared inode twice), device nodes removed. Refuses ids outside
 * 0..size-1 before changing anything.
 */
async function collect(
  dir: string,
  size: number,
): Promise<{ entries: Entry[]; bytes: number; devices: number }> {
  const entries: Entry[] = [];
  const seen = new Set<string>();
  let bytes = 0;
  let devices = 0;
  const visit = (path: string, st: Stats) => {
    if (st.uid >= size) throw idTooLarge(path, st.uid, size, 'owner uid');
    if (st.gid >= size) throw idTooLarge(path, st.gid, size, 'group gid');
    if (!st.isDirectory() && st.nlink > 1) {
      const key = `${st.dev}:${st.ino}`;
      if (seen.has(key)) return;
      seen.add(key);
    }
    if (st.isFile()) bytes += st.size;
    entries.push({ path, uid: st.uid, gid: st.gid, mode: st.mode, symlink: st.isSymbolicLink() });
  };
  const rootSt = await lstat(dir);
  visit(dir, rootSt);
  const dirs = [dir];
  while (dirs.length > 0) {
    const d = dirs.pop() as string;
    const names = await readdir(d);
    await inBatches(names, async (name) => {
      const p = join(d, name);
      const st = await lstat(p);
      if (isDeviceNode(st)) {
        await unlink(p);
        devices += 1;
        return;
      }
      visit(p, st);
      if (st.isDirectory()) dirs.push(p);
    });
  }
  return { entries, bytes, devices };
}

/** Remove every device node under `root` (whiteouts kept); returns how many went. */
export async function dropDeviceNodes(root: string): Promise<number> {
  let dropped = 0;
  const dirs = [resolve(root)];
  while (dirs.length > 0) {
    const d = dirs.pop() as string;
    for (const name of await readdir(d)) {
      const p = join(d, name);
      const st = await lstat(p);
      if (isDeviceNode(st)) {
        await unlink(p);
        dropped += 1;
      } else if (st.isDirectory()) dirs.push(p);
    }
  }
  return dropped;
}

/** Shift every owner, capability and ACL under `dir` into the host range starting at `opts.hostStart`. */
export async function shiftTree(
  root: string,
  opts: UidShift,
): Promise<{ files: number; bytes: number; devices: number }> {
  const dir = resolve(root);
  const { hostStart, size } = opts;
  const { entries, bytes, devices } = await collect(dir, size);

  // Read capabilities and ACLs *before* chown: the kernel drops security.capability on every ownership
  // change (so a setcap'ed binary like ping would silently lose its capabilities otherwise).
  const xattrs = await readXattrsTree(dir, [CAP_XATTR, ACL_ACCESS, ACL_DEFAULT]);
  const rewritten = new Map<string, Map<string, Buffer>>();
  for (const [path, attrs] of xattrs) {
    const next = new Map<string, Buffer>();
    for (const [name, value] of attrs) {
      if (name === CAP_XATTR) next.set(name, shiftCapability(value, hostStart, size, path));
      else if (name === ACL_ACCESS || name === ACL_DEFAULT)
        next.set(name, shiftAcl(value, hostStart, size, path, name));
    }
    if (next.size > 0) rewritten.set(path, next);
  }

  await inBatches(entries, async (e) => {
    // lchown: a symlink's target is a host path when seen from outside the layer; following it would
    // chown host files (e.g. a layer symlink to /etc/passwd).
    await lchown(e.path, hostStart + e.uid, hostStart + e.gid);
    // chown clears setuid/setgid; put them back (chmod follows symlinks, so never on one).
    if (!e.symlink && (e.mode & 0o6000) !== 0) await chmod(e.path, e.mode & 0o7777);
  });

  await writeXattrs(rewritten);
  // Setting an access ACL recomputes mode bits and may clear setgid: restore the original mode once more.
  const modeOf = new Map(entries.map((e) => [e.path, e]));
  for (const path of rewritten.keys()) {
    const e = modeOf.get(path);
    if (e && !e.symlink && (e.mode & 0o6000) !== 0) await chmod(path, e.mode & 0o7777);
  }
  return { files: entries.length, bytes, devices };
}
