import { z } from 'zod';
import type { DiffEntry, DiffSide } from '../../../service/ports.ts';
import { defineTool, HINTS, pathArg } from '../kit/tool-kit.ts';

/** Entries listed per kind; a model's context is not the place for a 100 000-line listing. */
const MAX_LISTED = 500;

const entryShape = z.object({ path: z.string(), type: z.string(), size: z.number() });
const modifiedShape = z.object({ path: z.string(), changes: z.array(z.string()) });

/** Stands in for a side the engine always fills (added: b, removed: a). */
const NONE: DiffSide = { type: 'other', size: 0, mode: 0 };
const one = (e: DiffEntry, s: DiffSide | undefined) => ({
  path: e.path,
  type: (s ?? NONE).type,
  size: (s ?? NONE).size,
});

export const sandboxDiff = defineTool({
  name: 'sandbox_diff',
  title: 'Diff two sandboxes',
  description: `Compare two sandboxes' files: paths added in b, removed from a, modified. At most ${MAX_LISTED} per kind (truncated: narrow with paths).`,
  annotations: HINTS.read,
  input: z.object({
    a: z.string().min(1).max(128).optional().describe('Before (default: yours)'),
    b: z.string().min(1).max(128).describe('After: sandbox id or name'),
    paths: z.array(pathArg).max(64).optional().describe('Only under these paths'),
    unified_for: pathArg.optional().describe('File to diff by line (≤1 MiB a side)'),
    project: z.boolean().optional().describe('b vs its host project dir'),
  }),
  output: z.object({
    a: z.string(),
    b: z.string(),
    base: z.string().nullable(),
    counts: z.object({ added: z.number(), removed: z.number(), modified: z.number() }),
    added: z.array(entryShape),
    removed: z.array(entryShape),
    modified: z.array(modifiedShape),
    truncated: z.boolean(),
    unified: z.string().optional(),
  }),
  bulk: ['unified'],
  async run(args, { api, sandbox }) {
    const a = args.project ? args.b : await sandbox(args.a);
    const d = await api.diffSandboxes(a, args.b, {
      ...(args.paths === undefined ? {} : { paths: args.paths }),
      ...(args.unified_for === undefined ? {} : { unifiedFor: args.unified_for }),
      ...(args.project ? { project: true } : {}),
    });
    // A project's exact renames are listed as modified at their new path (the listing's shape is fixed).
    const modified = [
      ...(d.renamed ?? []).map((r) => ({ path: r.to, changes: [`renamed from ${r.from}`] })),
      ...d.modified.map((e) => ({ path: e.path, changes: e.changes ?? [] })),
    ];
    const listed =
      d.added.length <= MAX_LISTED && d.removed.length <= MAX_LISTED && modified.length <= MAX_LISTED;
    return {
      structured: {
        a: d.a,
        b: d.b,
        base: d.base,
        // The whole diff's counts; the lists are its first page (at most MAX_LISTED of each).
        counts: {
          added: d.counts?.added ?? d.added.length,
          removed: d.counts?.removed ?? d.removed.length,
          modified: d.counts ? d.counts.modified + d.counts.renamed : modified.length,
        },
        added: d.added.slice(0, MAX_LISTED).map((e) => one(e, e.b)),
        removed: d.removed.slice(0, MAX_LISTED).map((e) => one(e, e.a)),
        modified: modified.slice(0, MAX_LISTED),
        truncated: d.truncated || !listed || (d.nextCursor ?? null) !== null,
        ...(d.unified === undefined ? {} : { unified: d.unified }),
      },
    };
  },
});
