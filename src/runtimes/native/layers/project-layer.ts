/**
 * The user's project directory in a sandbox (docs/STORAGE.md, "Project directories"). A create with a
 * project makes a tiny *project layer* `<state>/projects/p-<id>/root`: empty directories down to the
 * mount path (with the owners and modes the sandbox should see) and, beside `root`, `project.json` (the
 * host path, the mount path, and every host file's size, mtime and ctime at create, for `apply`). The
 * layer goes in the sandbox's lowers like any other, so forks, snapshots and restores carry it with no
 * code of their own. Wherever a sandbox's root overlay is mounted over a chain holding a project layer,
 * a second overlay is mounted at the mount path: its lowers are that path in every layer above the
 * project layer, then an idmapped read-only clone of the host directory (host/idmap.ts); its upper is
 * that path in the sandbox's own upper. So the sandbox's writes under the mount path land in its upper
 * like all its writes, a fork freezes them with the rest, and the host directory is never written.
 */

import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import { SIZES } from '../../../domain/limits.ts';
import type { LayerChain } from '../../../service/ports.ts';
import { openIdmappedTree } from '../host/idmap.ts';
import type { Mounts } from '../host/mounts.ts';
import type { UidRange } from '../host/uid-range.ts';

export const PROJECT_PREFIX = 'p-';

/** One host entry at create: size, mtime and ctime (ns, as strings: they exceed 2^53). */
export type ManifestEntry = [size: number, mtimeNs: string, ctimeNs: string];

export interface ProjectInfo {
  /** The host directory (a real path, under a project root when it was checked). */
  hostPath: string;
  /** Where the sandbox sees it: an absolute, normalised path. */
  mountPath: string;
}

const infoCache = new Map<string, ProjectInfo | null>();
/** Project layers made for a create still under way: no sandbox holds them yet, but they are in use. */
const pending = new Set<string>();

/** Mark a new project layer as in use until `done` (layer collection leaves it alone meanwhile). */
export function holdProjectLayer(layer: string): () => void {
  pending.add(layer);
  return () => {
    pending.delete(layer);
  };
}

/** The project a layer stands for, or null when it is no project layer. */
export function projectOf(layer: string): ProjectInfo | null {
  if (basename(layer) !== 'root' || !basename(dirname(layer)).startsWith(PROJECT_PREFIX)) return null;
  const cached = infoCache.get(layer);
  if (cached !== undefined) return cached;
  let info: ProjectInfo | null = null;
  try {
    const j = JSON.parse(readFileSync(join(dirname(layer), 'project.json'), 'utf8')) as Partial<ProjectInfo>;
    if (typeof j.hostPath === 'string' && typeof j.mountPath === 'string')
      info = { hostPath: j.hostPath, mountPath: j.mountPath };
  } catch {
    info = null;
  }
  infoCache.set(layer, info);
  return info;
}

/** The project layer in a chain of lowers (newest first) and its index, if any. */
export function findProject(lowers: string[]): { index: number; layer: string; info: ProjectInfo } | null {
  for (let i = 0; i < lowers.length; i++) {
    const layer = lowers[i] as string;
    const info = projectOf(layer);
    if (info) return { index: i, layer, info };
  }
  return null;
}

/** Entries statted between yields to the event loop while a manifest is taken. */
const MANIFEST_SLICE = 4096;

/**
 * Every host entry's size, mtime and ctime, keyed by relative path; never follows a symlink. Synchronous
 * calls in slices (an async lstat per file cost ~10× as much: 2,000 files took 40–170 ms, against 8–13),
 * yielding to the event loop between slices so a big project does not stall the daemon.
 */
export async function manifestOf(hostPath: string): Promise<Record<string, ManifestEntry>> {
  const out: Record<string, ManifestEntry> = {};
  let count = 0;
  const dirs = [''];
  while (dirs.length > 0) {
    const rel = dirs.pop() as string;
    for (const e of readdirSync(rel === '' ? hostPath : join(hostPath, rel), { withFileTypes: true })) {
      if (++count > SIZES.projectEntries)
        throw new ForkboxError(
          'invalid_argument',
          `the project has more than ${SIZES.projectEntries} files and directories; pick a smaller directory.`,
        );
      if (count % MANIFEST_SLICE === 0) await new Promise((r) => setImmediate(r));
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      const st = lstatSync(join(hostPath, r), { bigint: true });
      out[r] = [Number(st.size), st.mtimeNs.toString(), st.ctimeNs.toString()];
      if (st.isDirectory()) dirs.push(r);
    }
  }
  return out;
}

export function readManifest(layer: string): Record<string, ManifestEntry> {
  return JSON.parse(readFileSync(join(dirname(layer), 'manifest.json'), 'utf8')) as Record<
    string,
    ManifestEntry
  >;
}

export function writeManifest(layer: string, m: Record<string, ManifestEntry>): void {
  const f = join(dirname(layer), 'manifest.json');
  writeFileSync(`${f}.tmp`, JSON.stringify(m), { mode: 0o600 });
  renameSync(`${f}.tmp`, f);
}

/** A host id as the sandbox sees it on the host side (shifted; ids past the range become nobody). */
const shifted = (id: number, r: UidRange) => r.hostStart + (id < r.size ? id : 65534);

/**
 * Make the project layer for sandbox `id`: the mount path's directories (parents like the image's, else
 * root's 0755; the last one like the host directory), project.json and the manifest. Returns its path.
 */
export async function makeProjectLayer(
  projectsDir: string,
  id: string,
  info: ProjectInfo,
  uidRange: UidRange,
  imageLowers: string[],
): Promise<string> {
  const dir = join(projectsDir, `${PROJECT_PREFIX}${id}`);
  const root = join(dir, 'root');
  mkdirSync(root, { recursive: true, mode: 0o755 });
  try {
    const manifest = await manifestOf(info.hostPath);
    const comps = info.mountPath.split('/').filter((c) => c !== '');
    let rel = '';
    for (let i = 0; i < comps.length; i++) {
      rel = `${rel}/${comps[i]}`;
      const last = i === comps.length - 1;
      const from = last ? null : imageLowers.map((l) => join(l, rel)).find((p) => existsSync(p));
      const st = last ? lstatSync(info.hostPath) : from ? lstatSync(from) : null;
      const uid = last && st ? shifted(st.uid, uidRange) : (st?.uid ?? uidRange.hostStart);
      const gid = last && st ? shifted(st.gid, uidRange) : (st?.gid ?? uidRange.hostStart);
      const p = join(root, rel);
      mkdirSync(p, { mode: 0o755 });
      chmodOwn(p, st ? st.mode & 0o7777 : 0o755, uid, gid);
    }
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest), { mode: 0o600 });
    writeFileSync(join(dir, 'project.json'), JSON.stringify(info), { mode: 0o600 });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return root;
}

function chmodOwn(p: string, mode: number, uid: number, gid: number): void {
  // A directory we just made: nothing else can have replaced it.
  chownSync(p, uid, gid);
  chmodSync(p, mode);
}

/**
 * Before a sandbox's root overlay is mounted: make the mount path's directories in its (fresh) upper,
 * each like the project layer's, so the nested overlay has its upper and the root overlay its mount point.
 */
export function prepareProjectUpper(upper: string, lowers: string[]): void {
  const p = findProject(lowers);
  if (!p) return;
  let rel = '';
  for (const c of p.info.mountPath.split('/').filter((x) => x !== '')) {
    rel = `${rel}/${c}`;
    const target = join(upper, rel);
    if (existsSync(target)) continue;
    const st = lstatSync(join(p.layer, rel));
    mkdirSync(target);
    chmodOwn(target, st.mode & 0o7777, st.uid, st.gid);
  }
}

/** The chain the nested overlay stacks (for the mount and for diffs), the host directory last. */
export function projectChain(chain: LayerChain): (LayerChain & { info: ProjectInfo; layer: string }) | null {
  const p = findProject(chain.lowers);
  if (!p) return null;
  const mp = p.info.mountPath;
  const above = chain.lowers
    .slice(0, p.index)
    .map((l) => join(l, mp))
    .filter((l) => existsSync(l));
  return { upper: join(chain.upper, mp), lowers: [...above, p.info.hostPath], info: p.info, layer: p.layer };
}

/**
 * After the root overlay is mounted at `rootMnt`: mount the project's overlay at its mount path. `sbDir`
 * holds the sandbox's upper (`upper`) and the overlay's work dir (`pwork`). `idmaps.layers`: what the
 * layers are seen through (the sandbox's block: host/userns-maker.ts; none for a sandbox made before
 * ranges); `idmaps.host`: what the host directory is seen through (the block's host idmap, or the user
 * namespace of a process in a legacy template). Refuses a host directory that is no longer the real path
 * it was (replaced by a symlink since the create).
 */
export function mountProject(
  mounts: Mounts,
  rootMnt: string,
  chain: LayerChain,
  sbDir: string,
  idmaps: { layers: number | undefined; host: { fd: number } | { pid: number } },
): void {
  const pc = projectChain(chain);
  if (!pc) return;
  const host = pc.info.hostPath;
  let real: string;
  try {
    real = realpathSync(host);
  } catch {
    throw new ForkboxError('not_found', `the project directory ${host} is gone from the host.`);
  }
  if (real !== host)
    throw new ForkboxError(
      'permission_denied',
      `the project directory ${host} is now a link to ${real}; forkbox will not follow it.`,
    );
  mkdirSync(join(sbDir, 'pwork'), { recursive: true, mode: 0o700 });
  const tree = openIdmappedTree(host, idmaps.host);
  try {
    const lowers = [
      ...pc.lowers.slice(0, -1).map((path) => ({ path, idmap: idmaps.layers })),
      { path: tree.path },
    ];
    const upper = relative(sbDir, pc.upper);
    if (idmaps.layers === undefined)
      mounts.overlay(join(rootMnt, pc.info.mountPath), lowers, pc.upper, join(sbDir, 'pwork'));
    else
      mounts.overlay(join(rootMnt, pc.info.mountPath), lowers, {
        root: sbDir,
        upper,
        work: 'pwork',
        idmap: idmaps.layers,
      });
  } finally {
    tree.close();
  }
}

/** Remove a project layer no sandbox or snapshot uses (only forkbox's own files are in it). */
export function removeProjectLayer(layer: string): void {
  infoCache.delete(layer);
  rmSync(dirname(layer), { recursive: true, force: true });
}

/** Every project layer under `projectsDir`. */
export function listProjectLayers(projectsDir: string): string[] {
  try {
    return readdirSync(projectsDir)
      .filter((n) => n.startsWith(PROJECT_PREFIX))
      .map((n) => join(projectsDir, n, 'root'))
      .filter((l) => !pending.has(l));
  } catch {
    return [];
  }
}
