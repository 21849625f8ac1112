/**
 * OCI/aufs whiteouts (`.wh.NAME` files, `.wh..wh..opq` markers) → overlayfs whiteouts (a 0/0 character
 * device named NAME; the `trusted.overlay.opaque=y` xattr on the directory). Without this, a deleted file
 * in an imported layer would reappear from the layer below, and `.wh.` junk files would be visible.
 */
import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { mknodChar, setXattr } from '../util/fs-calls.ts';

export const WH_PREFIX = '.wh.';
export const WH_OPAQUE = '.wh..wh..opq';

export type WhiteoutKind =
  | { kind: 'opaque' }
  | { kind: 'whiteout'; target: string }
  /** Other `.wh..wh.` metadata (aufs hardlink dirs etc.): drop it. */
  | { kind: 'meta' }
  | null;

/** What a directory entry name means as a whiteout, or null for an ordinary name. */
export function classifyWhiteout(name: string): WhiteoutKind {
  if (name === WH_OPAQUE) return { kind: 'opaque' };
  if (!name.startsWith(WH_PREFIX)) return null;
  if (name.startsWith(`${WH_PREFIX}${WH_PREFIX}`)) return { kind: 'meta' };
  const target = name.slice(WH_PREFIX.length);
  // ".wh." / ".wh.." / ".wh..." would name the directory itself or its parent: a whiteout there would
  // create a device node outside the intended place. Treat as junk.
  if (target === '' || target === '.' || target === '..' || target.includes('/')) return { kind: 'meta' };
  return { kind: 'whiteout', target };
}

export interface WhiteoutPlan {
  /** Files to delete (the `.wh.*` markers themselves). */
  remove: string[];
  /** Paths where a 0/0 character device must be created. */
  devices: string[];
  /** Directories to mark opaque. */
  opaque: string[];
}

/**
 * Plan the conversion for one directory's entry names. A whiteout whose target exists in the same
 * directory is dropped (OCI: a whiteout hides only lower layers; the same layer's entry wins).
 */
export function planDirectory(dir: string, names: readonly string[]): WhiteoutPlan {
  const plan: WhiteoutPlan = { remove: [], devices: [], opaque: [] };
  const present = new Set(names);
  for (const name of names) {
    const k = classifyWhiteout(name);
    if (k === null) continue;
    plan.remove.push(join(dir, name));
    if (k.kind === 'opaque') plan.opaque.push(dir);
    else if (k.kind === 'whiteout' && !present.has(k.target)) plan.devices.push(join(dir, k.target));
  }
  return plan;
}

/** Convert every whiteout under `root` in place (symlinked directories are not followed). */
export async function convertWhiteouts(root: string): Promise<{ whiteouts: number; opaque: number }> {
  let whiteouts = 0;
  let opaque = 0;
  const dirs = [root];
  while (dirs.length > 0) {
    const d = dirs.pop() as string;
    const names = await readdir(d);
    const plan = planDirectory(d, names);
    for (const p of plan.remove) await rm(p, { recursive: true, force: true });
    for (const dev of plan.devices) {
      // Mode 0 like docker's whiteouts. Ownership is shifted later with the rest.
      mknodChar(dev, 0o000, 0, 0);
      whiteouts++;
    }
    for (const o of plan.opaque) {
      setXattr(o, 'trusted.overlay.opaque', Buffer.from('y'));
      opaque++;
    }
    const removed = new Set(plan.remove);
    for (const name of names) {
      const p = join(d, name);
      if (removed.has(p)) continue;
      if ((await lstat(p)).isDirectory()) dirs.push(p);
    }
  }
  return { whiteouts, opaque };
}
