/**
 * Reading overlay layers safely for the diff (layer-diff.ts). The live upper dirs are written by
 * untrusted sandboxes and change while we read them. Every walk goes through directory fds
 * (`/proc/self/fd/N/name`, like openat) opened with O_NOFOLLOW, so a symlink, or a directory swapped
 * for a symlink mid-walk, never leads us out of the layer; files are first opened O_PATH (no open() on
 * a planted device or FIFO), checked to be regular with fstat, then reopened through that exact inode.
 * Nothing in a layer is ever written, chmodded or chowned.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  type Stats,
} from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import { readXattrsTree } from '../../../images/xattr.ts';
import type { FileType } from '../../../service/ports.ts';
import { getXattr } from '../../../util/fs-calls.ts';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;
/** Linux O_PATH (Node does not export it): an fd naming an inode without opening the file. */
const O_PATH = 0o10000000;
const OPAQUE = 'trusted.overlay.opaque';

export type Kind = FileType | 'whiteout';

export interface LNode {
  kind: Kind;
  size: number;
  mode: number;
  uid: number;
  gid: number;
  rdev: number;
  dev: number;
  ino: number;
  opaque: boolean;
  linkTarget?: string;
}

export interface Layer {
  root: string;
  /** Walked layers (those above the common part) are held in memory; common layers are read on demand. */
  tree: Map<string, LNode> | null;
  children: Map<string, string[]> | null;
  /** Opaque directories of an on-demand layer (null: not needed, it is the bottom layer). */
  opaque: Set<string> | null;
  cache: Map<string, LNode | null>;
}

export interface Budget {
  left: number;
  truncated: boolean;
}

/** A walk gives the event loop back this often (entries): other callers' requests are served between. */
const YIELD_EVERY = 256;
export const yieldToLoop = (): Promise<void> => new Promise((r) => setImmediate(r));

export function take(b: Budget): boolean {
  if (b.left <= 0) {
    b.truncated = true;
    return false;
  }
  b.left--;
  return true;
}

function kindOf(st: Stats): Kind {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'dir';
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isCharacterDevice() && st.rdev === 0) return 'whiteout';
  return 'other';
}

function nodeOf(st: Stats, linkTarget?: string): LNode {
  const n: LNode = {
    kind: kindOf(st),
    size: st.size,
    mode: st.mode & 0o7777,
    uid: st.uid,
    gid: st.gid,
    rdev: st.rdev,
    dev: st.dev,
    ino: st.ino,
    opaque: false,
  };
  if (linkTarget !== undefined) n.linkTarget = linkTarget;
  return n;
}

/** Normalise an absolute sandbox path to a layer-relative one ('' is the root); `..` cannot climb out. */
export function relOf(path: string): string {
  return posix.normalize(`/${path}`).replace(/^\/+/, '').replace(/\/+$/, '');
}

export function makeFilter(paths: string[] | undefined) {
  const ps = paths?.map(relOf);
  const under = (rel: string, p: string) => p === '' || rel === p || rel.startsWith(`${p}/`);
  return {
    match: (rel: string) => !ps || ps.some((p) => under(rel, p)),
    /** Worth walking into: inside a filter, or on the way to one. */
    descend: (rel: string) => !ps || ps.some((p) => under(rel, p) || p.startsWith(`${rel}/`) || rel === ''),
  };
}
export type Filter = ReturnType<typeof makeFilter>;

/** Whether the directory open as `fd` carries trusted.overlay.opaque=y (unreadable: not opaque). */
function isOpaqueFd(fd: number): boolean {
  try {
    // Followed on purpose: /proc/self/fd/N names exactly the directory this process holds open.
    return getXattr(`/proc/self/fd/${fd}`, OPAQUE, { follow: true })?.toString('latin1') === 'y';
  } catch {
    return false;
  }
}

/** A layer's root directory, or not_found when it went (its sandbox ended during the diff). */
function openLayerRoot(root: string): number {
  try {
    return openSync(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    throw new ForkboxError(
      'not_found',
      `the layer ${root} is gone: the sandbox it belongs to ended during the diff. Diff a live sandbox or a snapshot.`,
    );
  }
}

/**
 * Walk one layer into memory through directory fds. Opaque flags are read through `/proc/self/fd/N` of
 * fds we hold: that magic link leads to exactly the directory we opened, not to whatever the sandbox
 * may have put at its path since.
 */
export async function walkLayer(root: string, filter: Filter, budget: Budget): Promise<Layer> {
  const tree = new Map<string, LNode>();
  const children = new Map<string, string[]>();
  const opaqueRels = new Set<string>();
  const noteOpaque = (dirFd: number, rel: string) => {
    if (isOpaqueFd(dirFd)) opaqueRels.add(rel);
  };
  const walkDir = async (fd: number, rel: string): Promise<void> => {
    let names: string[];
    try {
      names = readdirSync(`/proc/self/fd/${fd}`);
    } catch {
      return;
    }
    const kids: string[] = [];
    children.set(rel, kids);
    for (const name of names.sort()) {
      if (!take(budget)) return;
      if (budget.left % YIELD_EVERY === 0) await yieldToLoop();
      const childRel = rel === '' ? name : `${rel}/${name}`;
      const p = `/proc/self/fd/${fd}/${name}`;
      let st: Stats;
      try {
        st = lstatSync(p);
      } catch {
        continue; // removed meanwhile
      }
      let target: string | undefined;
      if (st.isSymbolicLink()) {
        try {
          target = readlinkSync(p); // the link's own text; never followed
        } catch {}
      }
      tree.set(childRel, nodeOf(st, target));
      kids.push(name);
      if (!st.isDirectory() || !filter.descend(childRel)) continue;
      let cfd: number;
      try {
        // O_NOFOLLOW|O_DIRECTORY: if the sandbox swapped the directory for a symlink, this fails.
        cfd = openSync(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      } catch {
        continue;
      }
      try {
        noteOpaque(cfd, childRel);
        await walkDir(cfd, childRel);
      } finally {
        closeSync(cfd);
      }
    }
  };
  const rootFd = openLayerRoot(root);
  try {
    tree.set('', nodeOf(fstatSync(rootFd)));
    noteOpaque(rootFd, '');
    await walkDir(rootFd, '');
  } finally {
    closeSync(rootFd);
  }
  for (const rel of opaqueRels) {
    const n = tree.get(rel);
    if (n?.kind === 'dir') n.opaque = true;
  }
  return { root, tree, children, opaque: null, cache: new Map() };
}

/** A read-only layer no sandbox writes any more (image or snapshot layer), read on demand. */
export async function diskLayer(root: string, needOpaque: boolean): Promise<Layer> {
  let opaque: Set<string> | null = null;
  if (needOpaque) {
    opaque = new Set();
    for (const [p, attrs] of await readXattrsTree(root, [OPAQUE]))
      if (p.startsWith(`${root}/`) && attrs.get(OPAQUE)?.toString('latin1') === 'y')
        opaque.add(p.slice(root.length + 1));
  }
  return { root, tree: null, children: null, opaque, cache: new Map() };
}

/**
 * Look a path up in one layer. On-demand layers are immutable, and resolve() only asks for a path
 * whose parent was a real directory in that layer, so a plain lstat never crosses a symlink.
 */
export function lookup(layer: Layer, rel: string): LNode | null {
  if (layer.tree) return layer.tree.get(rel) ?? null;
  const hit = layer.cache.get(rel);
  if (hit !== undefined) return hit;
  let n: LNode | null = null;
  try {
    const p = join(layer.root, rel);
    const st = lstatSync(p);
    n = nodeOf(st, st.isSymbolicLink() ? readlinkSync(p) : undefined);
    if (n.kind === 'dir' && layer.opaque?.has(rel)) n.opaque = true;
  } catch {}
  layer.cache.set(rel, n);
  return n;
}

export function listChildren(layer: Layer, rel: string): string[] {
  if (layer.children) return layer.children.get(rel) ?? [];
  try {
    return readdirSync(join(layer.root, rel));
  } catch {
    return [];
  }
}

/** Open a regular file inside a layer without following any symlink; null if it is not one (any more). */
export async function openRegular(root: string, rel: string): Promise<FileHandle | null> {
  const comps = rel.split('/');
  // '..' would climb out of the layer one component at a time (O_NOFOLLOW does not stop it).
  if (comps.some((c) => c === '' || c === '.' || c === '..')) return null;
  const last = comps.pop() as string;
  let dfd = -1;
  try {
    dfd = openSync(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    for (const c of comps) {
      const next = openSync(`/proc/self/fd/${dfd}/${c}`, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      closeSync(dfd);
      dfd = next;
    }
    // O_PATH|O_NOFOLLOW: names the inode without open()ing it, so a device or FIFO swapped in has no effect.
    const pfd = openSync(`/proc/self/fd/${dfd}/${last}`, O_PATH | O_NOFOLLOW);
    try {
      if (!fstatSync(pfd).isFile()) return null;
      // Reopening through the magic link opens exactly that (regular) inode.
      return await open(`/proc/self/fd/${pfd}`, O_RDONLY);
    } finally {
      closeSync(pfd);
    }
  } catch {
    return null;
  } finally {
    if (dfd >= 0) closeSync(dfd);
  }
}

export async function sha256Of(root: string, rel: string): Promise<string | null> {
  const fh = await openRegular(root, rel);
  if (!fh) return null;
  try {
    const h = createHash('sha256');
    for await (const chunk of fh.createReadStream({ autoClose: false })) h.update(chunk as Buffer);
    return h.digest('hex');
  } finally {
    await fh.close();
  }
}
