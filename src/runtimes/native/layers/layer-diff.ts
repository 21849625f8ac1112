/**
 * Diff two sandboxes from their overlay layers on the host (docs/ARCHITECTURE.md, "Diff"), without running anything in
 * them. Each view is upper over lowers; a 0/0 character device is a whiteout (deletes the path below);
 * a directory with `trusted.overlay.opaque=y` hides everything below it. The nearest common layer is the
 * longest common suffix of the two chains: only the layers above it are walked, and every path they
 * touch is resolved in both views and classified. No common layer: both full views are walked, bounded.
 * How layers are read without ever following a sandbox's symlinks: layer-walk.ts.
 */
import { basename, dirname } from 'node:path';
import { unifiedDiff } from '../../../service/diff/diff.ts';
import type {
  DiffEntry,
  DiffSide,
  FileType,
  LayerChain,
  LayerDiff,
  LayerDiffOptions,
} from '../../../service/ports.ts';
import {
  type Budget,
  diskLayer,
  type Filter,
  type Layer,
  type LNode,
  listChildren,
  lookup,
  makeFilter,
  openRegular,
  relOf,
  sha256Of,
  take,
  walkLayer,
  yieldToLoop,
} from './layer-walk.ts';

export { relOf } from './layer-walk.ts';

export const DEFAULT_MAX_ENTRIES = 200_000;
/** Each side of a unified diff is read up to this many bytes. */
export const MAX_UNIFIED_BYTES = 1024 * 1024;

interface Resolved {
  node: LNode;
  layer: Layer;
  rel: string;
  /** Layers whose directory at this path merge into the view (topmost first). */
  dirLayers: Layer[];
}

/** A path's final state in a view (layers topmost first), by overlay's rules; null when absent. */
function resolve(view: Layer[], rel: string): Resolved | null {
  const comps = rel === '' ? [] : rel.split('/');
  let active = view;
  for (let i = 0; i <= comps.length; i++) {
    const prefix = comps.slice(0, i).join('/');
    let top: { node: LNode; layer: Layer } | null = null;
    const dirs: Layer[] = [];
    for (const layer of active) {
      const n = lookup(layer, prefix);
      if (!n) continue;
      if (n.kind === 'whiteout') break; // deleted here: nothing below shows
      if (!top) top = { node: n, layer };
      // A non-directory hides everything below it; so does an upper dir over a lower non-dir.
      if (n.kind !== 'dir' || top.node.kind !== 'dir') break;
      dirs.push(layer);
      if (n.opaque) break;
    }
    if (!top) return null;
    if (i === comps.length) return { node: top.node, layer: top.layer, rel, dirLayers: dirs };
    if (top.node.kind !== 'dir') return null;
    active = dirs;
  }
  return null;
}

/** Every path under `rel` in a view (that the filter wants) into `out`. */
function enumerate(view: Layer[], rel: string, out: Set<string>, filter: Filter, budget: Budget): void {
  const r = resolve(view, rel);
  if (r?.node.kind !== 'dir') return;
  const names = new Set<string>();
  for (const l of r.dirLayers) for (const n of listChildren(l, rel)) names.add(n);
  for (const name of names) {
    const child = rel === '' ? name : `${rel}/${name}`;
    if (!filter.descend(child)) continue;
    if (!take(budget)) return;
    if (filter.match(child)) out.add(child);
    enumerate(view, child, out, filter, budget);
  }
}

function sideOf(r: Resolved): DiffSide {
  const n = r.node;
  const type: FileType = n.kind === 'whiteout' ? 'other' : n.kind;
  const s: DiffSide = { type, size: type === 'dir' ? 0 : n.size, mode: n.mode };
  if (n.linkTarget !== undefined) s.linkTarget = n.linkTarget;
  return s;
}

async function compare(ra: Resolved, rb: Resolved, sa: DiffSide, sb: DiffSide): Promise<string[]> {
  const a = ra.node;
  const b = rb.node;
  // The same inode (e.g. both resolve to one common-layer file) is the same content.
  if (a.dev === b.dev && a.ino === b.ino) return [];
  if (a.kind !== b.kind) return ['type'];
  const changes: string[] = [];
  if (a.kind === 'file') {
    if (a.size !== b.size) changes.push('size');
    else {
      const [ha, hb] = await Promise.all([sha256Of(ra.layer.root, ra.rel), sha256Of(rb.layer.root, rb.rel)]);
      if (ha) sa.sha256 = ha;
      if (hb) sb.sha256 = hb;
      if (!ha || !hb || ha !== hb) changes.push('content');
    }
  }
  if (a.kind === 'symlink' && a.linkTarget !== b.linkTarget) changes.push('target');
  if (a.kind === 'other' && a.rdev !== b.rdev) changes.push('device');
  if (a.mode !== b.mode) changes.push('mode');
  if (a.uid !== b.uid || a.gid !== b.gid) changes.push('owner');
  return changes;
}

/** One side's text for a unified diff, or a reason it has none. */
async function textOf(r: Resolved | null): Promise<{ text: string } | { why: string }> {
  if (!r) return { text: '' };
  if (r.node.kind !== 'file') return { why: `is a ${r.node.kind}, not a regular file` };
  if (r.node.size > MAX_UNIFIED_BYTES)
    return { why: `is too large to diff (${r.node.size} bytes; the limit is ${MAX_UNIFIED_BYTES})` };
  const fh = await openRegular(r.layer.root, r.rel);
  if (!fh) return { why: 'changed while being read' };
  try {
    const buf = Buffer.alloc(MAX_UNIFIED_BYTES + 1);
    let len = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, len, buf.length - len, len);
      if (bytesRead === 0) break;
      len += bytesRead;
      if (len > MAX_UNIFIED_BYTES) return { why: `is too large to diff (over ${MAX_UNIFIED_BYTES} bytes)` };
    }
    const data = buf.subarray(0, len);
    if (data.includes(0)) return { why: 'is binary' };
    return { text: data.toString('utf8') };
  } finally {
    await fh.close();
  }
}

async function unifiedOf(viewA: Layer[], viewB: Layer[], path: string): Promise<string> {
  const rel = relOf(path);
  const ra = resolve(viewA, rel);
  const rb = resolve(viewB, rel);
  if (!ra && !rb) return `/${rel} exists in neither sandbox\n`;
  const [ta, tb] = await Promise.all([textOf(ra), textOf(rb)]);
  if ('why' in ta || 'why' in tb) {
    if ('why' in ta && ta.why === 'is binary' && 'why' in tb && tb.why === 'is binary') {
      const same = ra && rb && (await compare(ra, rb, sideOf(ra), sideOf(rb))).length === 0;
      return same ? '' : `Binary files a/${rel} and b/${rel} differ\n`;
    }
    return [
      'why' in ta ? `/${rel} in A ${ta.why}\n` : '',
      'why' in tb ? `/${rel} in B ${tb.why}\n` : '',
    ].join('');
  }
  return unifiedDiff(ta.text, tb.text, {
    old: ra ? `a/${rel}` : '/dev/null',
    new: rb ? `b/${rel}` : '/dev/null',
  });
}

/** A layer's id for people: its dir name (a btrfs layer is `<layers>/s-<id>/upper`). */
function layerId(path: string): string {
  const b = basename(path);
  return b === 'upper' ? basename(dirname(path)) : b;
}

/** Compare two layer chains (each an upper over lowers, newest first). */
export async function diffLayerChains(
  a: LayerChain,
  b: LayerChain,
  opts: LayerDiffOptions = {},
): Promise<LayerDiff> {
  const chainA = [a.upper, ...a.lowers];
  const chainB = [b.upper, ...b.lowers];
  let k = 0;
  while (
    k < chainA.length &&
    k < chainB.length &&
    chainA[chainA.length - 1 - k] === chainB[chainB.length - 1 - k]
  )
    k++;
  const budget: Budget = { left: opts.maxEntries ?? DEFAULT_MAX_ENTRIES, truncated: false };
  const filter = makeFilter(opts.paths);
  const commonRoots = chainA.slice(chainA.length - k);
  // Opaque markers matter only in a layer with another one below it.
  const common = await Promise.all(commonRoots.map((r, i) => diskLayer(r, i < commonRoots.length - 1)));
  const topsA: Layer[] = [];
  for (const r of chainA.slice(0, chainA.length - k)) topsA.push(await walkLayer(r, filter, budget));
  const topsB: Layer[] = [];
  for (const r of chainB.slice(0, chainB.length - k)) topsB.push(await walkLayer(r, filter, budget));
  const viewA = [...topsA, ...common];
  const viewB = [...topsB, ...common];

  // Every path a top layer touches, plus what a whiteout, an opaque dir or a non-dir hides below it.
  const candidates = new Set<string>();
  for (const layer of [...topsA, ...topsB]) {
    for (const [rel, n] of layer.tree ?? []) {
      if (rel === '') continue;
      if (filter.match(rel)) candidates.add(rel);
      if ((n.kind !== 'dir' || n.opaque) && filter.descend(rel)) {
        enumerate(viewA, rel, candidates, filter, budget);
        enumerate(viewB, rel, candidates, filter, budget);
      }
    }
  }

  const out: LayerDiff = {
    base: k > 0 && commonRoots[0] ? layerId(commonRoots[0]) : null,
    added: [],
    removed: [],
    modified: [],
    truncated: false,
  };
  let seen = 0;
  for (const rel of [...candidates].sort()) {
    if (++seen % 256 === 0) await yieldToLoop();
    const ra = resolve(viewA, rel);
    const rb = resolve(viewB, rel);
    const path = `/${rel}`;
    if (!ra && rb) out.added.push({ path, b: sideOf(rb) });
    else if (ra && !rb) out.removed.push({ path, a: sideOf(ra) });
    else if (ra && rb) {
      const sa = sideOf(ra);
      const sb = sideOf(rb);
      const changes = await compare(ra, rb, sa, sb);
      if (changes.length > 0) out.modified.push({ path, a: sa, b: sb, changes } satisfies DiffEntry);
    }
  }
  out.truncated = budget.truncated;
  if (opts.unifiedFor !== undefined) out.unified = await unifiedOf(viewA, viewB, opts.unifiedFor);
  return out;
}

/** What one path is in a chain's merged view: absent, or its node and (regular files) its bytes. */
export interface ChainEntry {
  kind: LNode['kind'] | 'absent';
  mode: number;
  linkTarget?: string;
  /** A regular file's contents (null when it is larger than asked or changed while read). */
  data?: Buffer | null;
}

/** A chain's merged view, read on demand (layers are never followed through a symlink). */
export async function chainView(chain: LayerChain) {
  const roots = [chain.upper, ...chain.lowers];
  const view = await Promise.all(roots.map((r, i) => diskLayer(r, i < roots.length - 1)));
  return {
    async read(rel: string, maxBytes: number): Promise<ChainEntry> {
      const r = resolve(view, rel);
      if (!r) return { kind: 'absent', mode: 0 };
      const e: ChainEntry = { kind: r.node.kind, mode: r.node.mode };
      if (r.node.linkTarget !== undefined) e.linkTarget = r.node.linkTarget;
      if (r.node.kind !== 'file') return e;
      e.data = null;
      if (r.node.size > maxBytes) return e;
      const fh = await openRegular(r.layer.root, r.rel);
      if (!fh) return e;
      try {
        const buf = Buffer.alloc(r.node.size + 1);
        let len = 0;
        for (;;) {
          const { bytesRead } = await fh.read(buf, len, buf.length - len, len);
          if (bytesRead === 0) break;
          len += bytesRead;
          if (len > r.node.size) return e;
        }
        e.data = buf.subarray(0, len);
      } finally {
        await fh.close();
      }
      return e;
    },
  };
}
