/**
 * `forkbox apply`: write a sandbox's project changes back to the host directory (docs/STORAGE.md,
 * "Project directories"). Host-side and explicit. Nothing is written when any changed path is not on the
 * host as it was at create (size, mtime and ctime recorded then, in the project layer's manifest): the
 * host's own edits are never lost. Files are written to a temporary name and renamed; new entries take
 * their host parent's owner, modified ones keep theirs; no setuid, setgid or sticky bit is ever written,
 * devices, FIFOs and sockets are not carried back, a symlink is written as a symlink (never followed), and
 * nothing outside the directory is ever written (each parent's real path is checked).
 */
import {
  chmodSync,
  chownSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  realpathSync,
  renameSync,
  rmdirSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import type { LayerChain, LayerDiff } from '../../../service/ports.ts';
import { chainView } from './layer-diff.ts';
import { type ManifestEntry, readManifest, writeManifest } from './project-layer.ts';

/**
 * The permission bits a written file or directory keeps: never setuid, setgid or sticky. A sandbox's root
 * is not the host's, and a setuid file it made must not become a setuid-root one in the host directory.
 */
const PLAIN = 0o777;

export interface ApplyReport {
  written: string[];
  removed: string[];
}

function hostEntry(p: string): ManifestEntry | null {
  try {
    const st = lstatSync(p, { bigint: true });
    return [Number(st.size), st.mtimeNs.toString(), st.ctimeNs.toString()];
  } catch {
    return null;
  }
}

const same = (a: ManifestEntry | null, b: ManifestEntry | undefined) =>
  a === null ? b === undefined : b !== undefined && a[0] === b[0] && a[1] === b[1] && a[2] === b[2];

/** The parent of `rel` inside `host`, checked to be a real directory under it. */
function parentIn(host: string, rel: string): string {
  const parent = dirname(join(host, rel));
  const real = realpathSync(parent);
  if (real !== host && !real.startsWith(`${host}/`))
    throw new ForkboxError(
      'permission_denied',
      `/${rel}: its host directory leads out of the project; nothing more was applied.`,
    );
  return real;
}

export async function applyProject(
  host: string,
  layer: string,
  sandbox: LayerChain,
  diff: LayerDiff,
): Promise<ApplyReport> {
  const manifest = readManifest(layer);
  const rels = [...diff.added, ...diff.removed, ...diff.modified].map((e) => e.path.slice(1));
  const conflicts = rels.filter((rel) => !same(hostEntry(join(host, rel)), manifest[rel]));
  if (conflicts.length > 0)
    throw new ForkboxError(
      'conflict',
      `${conflicts.length} changed path(s) also changed on the host since the sandbox was created (${conflicts
        .slice(0, 5)
        .map((r) => `/${r}`)
        .join(
          ', ',
        )}${conflicts.length > 5 ? ', …' : ''}); nothing was applied. Merge by hand with 'forkbox export --patch'.`,
      { conflicts: conflicts.slice(0, 100) },
    );
  const sv = await chainView(sandbox);
  const report: ApplyReport = { written: [], removed: [] };
  // Removals deepest first (a removed directory's entries are listed too), then writes parents first.
  const removals: string[] = [];
  const writes: string[] = [];
  for (const rel of rels) ((await sv.read(rel, 0)).kind === 'absent' ? removals : writes).push(rel);
  for (const rel of removals.sort().reverse()) {
    const p = join(parentIn(host, rel), rel.split('/').pop() as string);
    const st = lstatSync(p, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isDirectory()) rmdirSync(p);
    else unlinkSync(p);
    report.removed.push(`/${rel}`);
    delete manifest[rel];
  }
  for (const rel of writes.sort()) {
    const e = await sv.read(rel, Number.MAX_SAFE_INTEGER);
    const parent = parentIn(host, rel);
    const p = join(parent, rel.split('/').pop() as string);
    const old = lstatSync(p, { throwIfNoEntry: false });
    const owner = old ?? lstatSync(parent);
    const tmp = `${p}.forkbox-apply-${process.pid}`;
    if (e.kind === 'dir') {
      if (old?.isDirectory()) continue;
      if (old) unlinkSync(p);
      mkdirSync(p, { mode: e.mode & PLAIN });
      chownSync(p, owner.uid, owner.gid);
    } else if (e.kind === 'file' || e.kind === 'symlink') {
      if (old?.isDirectory()) rmdirSync(p);
      if (e.kind === 'file')
        writeFileSync(tmp, e.data ?? Buffer.alloc(0), { mode: e.mode & PLAIN, flag: 'wx' });
      else symlinkSync(e.linkTarget ?? '', tmp);
      try {
        lchownSync(tmp, owner.uid, owner.gid);
        if (e.kind === 'file') chmodSync(tmp, e.mode & PLAIN);
        renameSync(tmp, p);
      } catch (err) {
        unlinkSync(tmp);
        throw err;
      }
    } else continue; // devices, FIFOs, sockets: not carried back
    report.written.push(`/${rel}`);
    const now = hostEntry(p);
    if (now) manifest[rel] = now;
  }
  writeManifest(layer, manifest);
  return report;
}
