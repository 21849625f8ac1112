/**
 * Diff of two fake sandboxes' files, in the shape of Runtime.diffLayers: added (only in B), removed
 * (only in A), modified (type, size, content or mode differ), under optional path prefixes, with a
 * whole-file unified diff of one path when asked. The fake compares full views (it keeps no per-layer
 * deltas); `base` is the nearest layer both chains share, as the native runtime reports it.
 */
import { createHash } from 'node:crypto';
import type { DiffEntry, DiffSide, LayerDiff, LayerDiffOptions } from '../../../src/service/ports.ts';
import type { FakeFs, FsNode } from './fake-fs.ts';

function side(n: FsNode): DiffSide {
  return n.kind === 'file'
    ? {
        type: 'file',
        size: n.data.length,
        mode: n.mode,
        sha256: createHash('sha256').update(n.data).digest('hex'),
      }
    : { type: 'dir', size: 0, mode: n.mode };
}

function changes(a: DiffSide, b: DiffSide): string[] {
  const out: string[] = [];
  if (a.type !== b.type) out.push('type');
  if (a.size !== b.size) out.push('size');
  if (a.sha256 !== b.sha256) out.push('content');
  if (a.mode !== b.mode) out.push('mode');
  return out;
}

function unified(path: string, a: FsNode | undefined, b: FsNode | undefined): string {
  const lines = (n: FsNode | undefined) =>
    n?.kind === 'file'
      ? n.data
          .toString('utf8')
          .split('\n')
          .filter((l, i, all) => l !== '' || i < all.length - 1)
      : [];
  const la = lines(a);
  const lb = lines(b);
  return [
    `--- a${path}`,
    `+++ b${path}`,
    `@@ -1,${la.length} +1,${lb.length} @@`,
    ...la.map((l) => `-${l}`),
    ...lb.map((l) => `+${l}`),
    '',
  ].join('\n');
}

export function diffFakeLayers(
  a: FakeFs,
  b: FakeFs,
  base: string | null,
  opts: LayerDiffOptions = {},
): LayerDiff {
  const wanted = (p: string) =>
    !opts.paths || opts.paths.some((q) => p === q || p.startsWith(q.endsWith('/') ? q : `${q}/`));
  const paths = new Set([...a.nodes.keys(), ...b.nodes.keys()].filter((p) => p !== '/' && wanted(p)));
  const added: DiffEntry[] = [];
  const removed: DiffEntry[] = [];
  const modified: DiffEntry[] = [];
  const max = opts.maxEntries ?? 200_000;
  let seen = 0;
  let truncated = false;
  for (const p of [...paths].sort()) {
    if (++seen > max) {
      truncated = true;
      break;
    }
    const na = a.nodes.get(p);
    const nb = b.nodes.get(p);
    if (!na && nb) added.push({ path: p, b: side(nb) });
    else if (na && !nb) removed.push({ path: p, a: side(na) });
    else if (na && nb) {
      const c = changes(side(na), side(nb));
      if (c.length > 0) modified.push({ path: p, a: side(na), b: side(nb), changes: c });
    }
  }
  const out: LayerDiff = { base, added, removed, modified, truncated };
  if (opts.unifiedFor !== undefined)
    out.unified = unified(opts.unifiedFor, a.nodes.get(opts.unifiedFor), b.nodes.get(opts.unifiedFor));
  return out;
}
