/**
 * Exact renames in a project diff (docs/STORAGE.md, "Project directories"): a host file the sandbox
 * removed and a file it added with the same bytes are one move, as git shows it ("similarity 100%").
 * Only regular files are paired; candidates are paired by size first and hashed only then, within bounds
 * on how many are looked at and how many bytes are read, so a diff of a huge tree stays cheap. Past the
 * bounds the rest simply stay added and removed — a listing that is still true.
 */
import { createHash } from 'node:crypto';
import type { DiffEntry, DiffSide, LayerChain, LayerDiff, RenamedEntry } from '../../../service/ports.ts';
import { chainView } from './layer-diff.ts';

/** At most this many removed and this many added files are considered. */
const MAX_CANDIDATES = 2000;
/** A file larger than this is never paired (its bytes would be read on both sides). */
const MAX_FILE_BYTES = 16 * 1024 * 1024;
/** All hashing of one diff reads at most this many bytes. */
const MAX_TOTAL_BYTES = 256 * 1024 * 1024;

type View = Awaited<ReturnType<typeof chainView>>;

interface Candidate {
  entry: DiffEntry;
  side: DiffSide;
}

/** The regular files of `entries` (their side `side`) small enough to pair, at most MAX_CANDIDATES. */
function candidates(entries: DiffEntry[], side: 'a' | 'b'): Candidate[] {
  const out: Candidate[] = [];
  for (const entry of entries) {
    const s = entry[side];
    if (s?.type === 'file' && s.size <= MAX_FILE_BYTES) out.push({ entry, side: s });
    if (out.length >= MAX_CANDIDATES) break;
  }
  return out;
}

/** The diff with its exact renames moved out of `added`/`removed` into `renamed`. */
export async function projectRenames(host: string, sandbox: LayerChain, diff: LayerDiff): Promise<LayerDiff> {
  const removed = candidates(diff.removed, 'a');
  const added = candidates(diff.added, 'b');
  if (removed.length === 0 || added.length === 0) return diff;
  const bySize = new Map<number, Candidate[]>();
  for (const c of removed) bySize.set(c.side.size, [...(bySize.get(c.side.size) ?? []), c]);
  const views = await Promise.all([chainView({ upper: host, lowers: [] }), chainView(sandbox)]);
  let budget = MAX_TOTAL_BYTES;
  const hashes = new Map<string, string | null>();
  async function hashOf(side: 0 | 1, path: string): Promise<string | null> {
    const key = `${side}${path}`;
    if (hashes.has(key)) return hashes.get(key) ?? null;
    const e = await (views[side] as View).read(path.slice(1), MAX_FILE_BYTES);
    const h = e.data ? createHash('sha256').update(e.data).digest('hex') : null;
    budget -= e.data?.length ?? 0;
    hashes.set(key, h);
    return h;
  }
  const renamed: RenamedEntry[] = [];
  const taken = new Set<DiffEntry>();
  for (const to of added) {
    const froms = (bySize.get(to.side.size) ?? []).filter((c) => !taken.has(c.entry));
    if (froms.length === 0) continue;
    if (budget <= 0) break;
    const h = await hashOf(1, to.entry.path);
    if (h === null) continue;
    for (const from of froms) {
      if (budget <= 0 || (await hashOf(0, from.entry.path)) !== h) continue;
      taken.add(from.entry);
      taken.add(to.entry);
      renamed.push({ from: from.entry.path, to: to.entry.path, a: from.side, b: to.side });
      break;
    }
  }
  if (renamed.length === 0) return diff;
  return {
    ...diff,
    added: diff.added.filter((e) => !taken.has(e)),
    removed: diff.removed.filter((e) => !taken.has(e)),
    renamed,
  };
}
