/**
 * Diffing two sandboxes or snapshots (docs/ARCHITECTURE.md, "Diff"): the engine-side entry point (resolution, state and
 * argument checks; the runtime then compares layer chains on the host) and a unified text diff of one file.
 *
 * The text diff is a Myers O((N+M)·D) line diff written here rather than a dependency: inputs are
 * capped (1 MiB a side by the caller), common prefix and suffix are trimmed first, and past
 * MAX_EDITS the differing middle is shown as one replacement, so time and memory stay bounded.
 */
import { errors } from '../domain/errors.ts';
import type { SandboxRecord, SnapshotRecord } from '../domain/types.ts';
import type { DiffRequest, DiffResult } from './api.ts';
import type { LayerChain, ProjectChain, Runtime, Store } from './ports.ts';
import { checkPath } from './validate.ts';

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

type Op = { kind: ' ' | '-' | '+'; line: string };

/** Past this many line edits the differing middle is shown as one block replaced by another. */
const MAX_EDITS = 2000;
/** Appended (internally) to a last line that has no newline, so "x" and "x\n" compare different. */
const NO_EOL = '\u0000noeol';

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  else lines[lines.length - 1] = `${lines[lines.length - 1]}${NO_EOL}`;
  return lines;
}

/** Myers' greedy shortest edit script, or null when it needs more than maxEdits edits. */
function myers(a: string[], b: string[], maxEdits: number): Op[] | null {
  const n = a.length;
  const m = b.length;
  const max = n + m;
  const off = max + 1;
  const v = new Int32Array(2 * max + 3);
  // trace[d] holds v[-(d+1) .. d+1] as it was before step d.
  const trace: Int32Array[] = [];
  for (let d = 0; d <= Math.min(max, maxEdits); d++) {
    trace.push(v.slice(off - d - 1, off + d + 2));
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && (v[off + k - 1] as number) < (v[off + k + 1] as number));
      let x = down ? (v[off + k + 1] as number) : (v[off + k - 1] as number) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) return backtrack(a, b, trace);
    }
  }
  return null;
}

function backtrack(a: string[], b: string[], trace: Int32Array[]): Op[] {
  const ops: Op[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = trace.length - 1; d >= 0; d--) {
    const t = trace[d] as Int32Array;
    const at = (k: number) => t[k + d + 1] as number;
    const k = x - y;
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1;
    const prevX = at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push({ kind: ' ', line: a[x - 1] as string });
      x--;
      y--;
    }
    if (d > 0) {
      if (x === prevX) ops.push({ kind: '+', line: b[y - 1] as string });
      else ops.push({ kind: '-', line: a[x - 1] as string });
    }
    x = prevX;
    y = prevY;
  }
  return ops.reverse();
}

export function diffLines(a: string[], b: string[], maxEdits = MAX_EDITS): Op[] {
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf])
    suf++;
  const midA = a.slice(pre, a.length - suf);
  const midB = b.slice(pre, b.length - suf);
  const mid = myers(midA, midB, maxEdits) ?? [
    ...midA.map((line) => ({ kind: '-' as const, line })),
    ...midB.map((line) => ({ kind: '+' as const, line })),
  ];
  const same = (line: string) => ({ kind: ' ' as const, line });
  return [...a.slice(0, pre).map(same), ...mid, ...a.slice(a.length - suf).map(same)];
}

function rangeOf(start: number, count: number): string {
  // An empty range names the line before it (GNU diff's convention).
  const s = count === 0 ? start - 1 : start;
  return count === 1 ? `${s}` : `${s},${count}`;
}

/** A unified diff of two texts ('' when they are equal), with `context` lines around each change. */
export function unifiedDiff(
  oldText: string,
  newText: string,
  labels: { old: string; new: string },
  context = 3,
): string {
  const ops = diffLines(splitLines(oldText), splitLines(newText));
  const changed = ops.flatMap((o, i) => (o.kind === ' ' ? [] : [i]));
  if (changed.length === 0) return '';
  let out = `--- ${labels.old}\n+++ ${labels.new}\n`;
  // Old/new line numbers (1-based) at the start of each op.
  const oldNo: number[] = [];
  const newNo: number[] = [];
  let on = 1;
  let nn = 1;
  for (const o of ops) {
    oldNo.push(on);
    newNo.push(nn);
    if (o.kind !== '+') on++;
    if (o.kind !== '-') nn++;
  }
  let i = 0;
  while (i < changed.length) {
    const start = Math.max(0, (changed[i] as number) - context);
    let last = changed[i] as number;
    while (i + 1 < changed.length && (changed[i + 1] as number) - last <= 2 * context) {
      i++;
      last = changed[i] as number;
    }
    const end = Math.min(ops.length, last + context + 1);
    const hunk = ops.slice(start, end);
    const oldCount = hunk.filter((o) => o.kind !== '+').length;
    const newCount = hunk.filter((o) => o.kind !== '-').length;
    out += `@@ -${rangeOf(oldNo[start] as number, oldCount)} +${rangeOf(newNo[start] as number, newCount)} @@\n`;
    for (const o of hunk) {
      const noEol = o.line.endsWith(NO_EOL);
      out += `${o.kind}${noEol ? o.line.slice(0, -NO_EOL.length) : o.line}\n`;
      if (noEol) out += '\\ No newline at end of file\n';
    }
    i++;
  }
  return out;
}
