/**
 * Diffing two sandboxes or snapshots (docs/ARCHITECTURE.md, "Diff"): the engine-side entry point (resolution, state and
 * argument checks; the runtime then compares layer chains on the host) and a unified text diff of one file.
 *
 * The text diff is jsdiff's line diff (O((N+M)·D)): inputs are capped (1 MiB a side by the caller) and
 * past MAX_EDITS edits jsdiff gives up and the two texts are shown as one replacement, so time and memory
 * stay bounded. Only the hunk headers are written here, as GNU `diff -u` writes them (jsdiff always
 * writes a count; patches and the console's split view are read the GNU way).
 */
import { type StructuredPatch, structuredPatch } from 'diff';
import { errors } from '../../domain/errors.ts';
import type { SandboxRecord, SnapshotRecord } from '../../domain/types.ts';
import type { DiffRequest, DiffResult } from '../api.ts';
import type { LayerChain, ProjectChain, Runtime, Store } from '../ports.ts';
import { checkPath } from '../validate.ts';

/** At most this many path filters per diff. */
export const MAX_DIFF_PATHS = 64;

export interface DiffDeps {
  runtime: Runtime;
  store: Store;
  /** The caller's sandbox by id or name (throws not_found). */
  find(idOrName: string): SandboxRecord;
  /** The caller's snapshot by id or name (throws not_found): its tenant's, in a namespace it may use. */
  findSnapshot(idOrName: string): SnapshotRecord;
}

/**
 * One side of a diff: a live sandbox (its upper over its lowers), or else one of the caller's snapshots
 * (its frozen layers; the newest stands in for the upper — it is read-only, which the walk never minds).
 */
function chainOf(deps: DiffDeps, idOrName: string): { id: string; chain: LayerChain } {
  let rec: SandboxRecord;
  try {
    rec = deps.find(idOrName);
  } catch (e) {
    let snap: SnapshotRecord | undefined;
    try {
      snap = deps.findSnapshot(idOrName);
    } catch {
      throw e;
    }
    const [top, ...rest] = snap.layers;
    if (!snap || top === undefined) throw e;
    return { id: snap.id, chain: { upper: top, lowers: rest } };
  }
  // A sandbox's upper dir exists only while it is live; an ended one has nothing left to compare.
  if (rec.state !== 'running' && rec.state !== 'paused') throw errors.sandboxNotRunning(rec.id, rec.state);
  return { id: rec.id, chain: deps.runtime.layerChain(rec) };
}

/** Diff two sandboxes (or snapshots) of the caller: `a` is the "before" side, `b` the "after". */
export async function diffSandboxRecords(
  deps: DiffDeps,
  a: string,
  b: string,
  req: DiffRequest = {},
): Promise<DiffResult> {
  if (req.paths !== undefined && (!Array.isArray(req.paths) || req.paths.length > MAX_DIFF_PATHS))
    throw errors.invalid(`paths must be a list of at most ${MAX_DIFF_PATHS} absolute paths.`);
  if (req.project === true) return diffProject(deps, b, req);
  if (req.patch === true)
    throw errors.invalid('patch needs project: a patch is made against the host directory.');
  const sa = chainOf(deps, a);
  const sb = chainOf(deps, b);
  const d = await deps.runtime.diffLayers(sa.chain, sb.chain, {
    ...(req.paths === undefined ? {} : { paths: req.paths.map(checkPath) }),
    ...(req.unifiedFor === undefined ? {} : { unifiedFor: checkPath(req.unifiedFor) }),
  });
  return { a: sa.id, b: sb.id, ...d };
}

/** A live sandbox's project chain, or a clear error. */
export function projectOf(deps: DiffDeps, idOrName: string): ProjectChain {
  const rec = deps.find(idOrName);
  if (rec.state !== 'running' && rec.state !== 'paused') throw errors.sandboxNotRunning(rec.id, rec.state);
  const pc = deps.runtime.projectChain?.(rec) ?? null;
  if (!pc)
    throw errors.invalid(`sandbox '${rec.id}' has no project directory (create it with --project DIR).`);
  return pc;
}

/** A project diff: owners differ by the uid shift on every file the sandbox copied up, so they are not compared. */
async function projectDiff(deps: DiffDeps, pc: ProjectChain, req: DiffRequest) {
  const d = await deps.runtime.diffLayers({ upper: pc.hostPath, lowers: [] }, pc, {
    ...(req.paths === undefined ? {} : { paths: req.paths.map(checkPath) }),
    ...(req.unifiedFor === undefined ? {} : { unifiedFor: checkPath(req.unifiedFor) }),
  });
  d.modified = d.modified.flatMap((e) => {
    const changes = (e.changes ?? []).filter((c) => c !== 'owner');
    return changes.length === 0 ? [] : [{ ...e, changes }];
  });
  return d;
}

/** B's project directory on the host (A) against B's view of it; paths are relative to the project. */
async function diffProject(deps: DiffDeps, b: string, req: DiffRequest): Promise<DiffResult> {
  const pc = projectOf(deps, b);
  const found = await projectDiff(deps, pc, req);
  const d = deps.runtime.projectRenames ? await deps.runtime.projectRenames(pc, found) : found;
  const out: DiffResult = { a: pc.hostPath, b: deps.find(b).id, ...d };
  if (req.patch === true) {
    if (!deps.runtime.projectPatch) throw errors.invalid('this runtime cannot make patches.');
    out.patch = await deps.runtime.projectPatch(pc, d);
  }
  return out;
}

/** Write B's project changes back to the host directory (host-side; the socket door only). */
export async function applyProjectOf(deps: DiffDeps, idOrName: string) {
  const pc = projectOf(deps, idOrName);
  if (!deps.runtime.applyProject) throw errors.invalid('this runtime cannot apply project changes.');
  const d = await projectDiff(deps, pc, {});
  if (d.truncated) throw errors.invalid('too many changed paths to apply in one go; nothing was applied.');
  return {
    sandbox: deps.find(idOrName).id,
    project: pc.hostPath,
    ...(await deps.runtime.applyProject(pc, d)),
  };
}

// ───────────── unified text diff ─────────────

/**
 * Past this many line edits the two texts are shown as one block replaced by the other: the search for
 * the shortest edit script costs O(lines × edits), and a sandbox chooses both texts.
 */
const MAX_EDITS = 2000;

/** Every old line removed and every new line added, in one hunk: the diff past MAX_EDITS. */
function replacedWhole(oldText: string, newText: string): StructuredPatch['hunks'][number] {
  const linesOf = (text: string, mark: '-' | '+') => {
    if (text === '') return [];
    const lines = text.split('\n');
    const eol = lines[lines.length - 1] === '';
    if (eol) lines.pop();
    const out = lines.map((l) => `${mark}${l}`);
    if (!eol) out.push('\\ No newline at end of file');
    return out;
  };
  const a = linesOf(oldText, '-');
  const b = linesOf(newText, '+');
  const count = (ls: string[]) => ls.filter((l) => !l.startsWith('\\')).length;
  return { oldStart: 1, oldLines: count(a), newStart: 1, newLines: count(b), lines: [...a, ...b] };
}

/** A hunk's range as GNU diff writes it: the count left out when 1, an empty range naming the line before. */
function rangeOf(start: number, count: number): string {
  const s = count === 0 ? start - 1 : start;
  return count === 1 ? `${s}` : `${s},${count}`;
}

/**
 * A unified diff of two texts ('' when they are equal), with `context` lines around each change, as GNU
 * `diff -u` writes it (jsdiff's line diff; past MAX_EDITS one block replaces the other).
 */
export function unifiedDiff(
  oldText: string,
  newText: string,
  labels: { old: string; new: string },
  context = 3,
  maxEdits = MAX_EDITS,
): string {
  if (oldText === newText) return '';
  const hunks = structuredPatch(labels.old, labels.new, oldText, newText, undefined, undefined, {
    context,
    maxEditLength: maxEdits,
  })?.hunks ?? [replacedWhole(oldText, newText)];
  let out = `--- ${labels.old}\n+++ ${labels.new}\n`;
  for (const h of hunks)
    out += `@@ -${rangeOf(h.oldStart, h.oldLines)} +${rangeOf(h.newStart, h.newLines)} @@\n${h.lines.join('\n')}\n`;
  return out;
}
