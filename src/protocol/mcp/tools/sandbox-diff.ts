import { z } from 'zod';
import type { DiffEntry, DiffSide } from '../../../service/ports.ts';
import { defineTool, HINTS, pathArg, SANDBOX_ARG_DESCRIPTION } from '../tool-kit.ts';

/** Entries listed per kind; a model's context is not the place for a 100 000-line listing. */
const MAX_LISTED = 500;

const sideShape = z.object({
  type: z.string(),
  size: z.number(),
  mode: z.string().describe('Octal permission bits.'),
  sha256: z.string().optional(),
  link_target: z.string().optional(),
});
const entryShape = z.object({ path: z.string() }).extend(sideShape.shape);
const modifiedShape = z.object({
  path: z.string(),
  changes: z.array(z.string()).describe('What differs: type, size, content, mode, owner, target, device.'),
  a: sideShape,
  b: sideShape,
});

function sideOut(s: DiffSide): z.input<typeof sideShape> {
  const out: z.input<typeof sideShape> = {
    type: s.type,
    size: s.size,
    mode: s.mode.toString(8).padStart(3, '0'),
  };
  if (s.sha256 !== undefined) out.sha256 = s.sha256;
  if (s.linkTarget !== undefined) out.link_target = s.linkTarget;
  return out;
}

/** Stands in for a side the engine always fills (added: b, removed: a, modified: both). */
const NONE: DiffSide = { type: 'other', size: 0, mode: 0 };
const one = (e: DiffEntry, s: DiffSide | undefined) => ({ path: e.path, ...sideOut(s ?? NONE) });

export const sandboxDiff = defineTool({
  name: 'sandbox_diff',
  title: 'Diff two sandboxes',
  description:
    "Compare two sandboxes' filesystems (e.g. two forks of one sandbox, or a fork and its source): paths added in b, removed from a, and modified (with what changed: type, size, content, mode, owner), with sizes and SHA-256 where contents were compared. Computed on the host from their layers, down to their nearest common layer; nothing runs inside. Narrow it with `paths`; pass `unified_for` to also get a unified text diff (a → b) of one file.",
  annotations: HINTS.read,
  input: z.object({
    a: z.string().min(1).max(128).optional().describe(`The "before" side. ${SANDBOX_ARG_DESCRIPTION}`),
    b: z.string().min(1).max(128).describe('The "after" side: sandbox id or name.'),
    paths: z.array(pathArg).max(64).optional().describe('Only paths equal to or under these absolute paths.'),
    unified_for: pathArg
      .optional()
      .describe('Also return a unified diff of this file (each side up to 1 MiB).'),
  }),
  output: z.object({
    a: z.string(),
    b: z.string(),
    base: z.string().nullable().describe('Nearest common layer, or null when they share none.'),
    counts: z.object({ added: z.number(), removed: z.number(), modified: z.number() }),
    added: z.array(entryShape),
    removed: z.array(entryShape),
    modified: z.array(modifiedShape),
    truncated: z
      .boolean()
      .describe(
        `The diff or its listing is incomplete (over ${MAX_LISTED} entries a kind): narrow it with paths.`,
      ),
    unified: z.string().optional(),
  }),
  async run(args, { api, sandbox }) {
    const a = await sandbox(args.a);
    const d = await api.diffSandboxes(a, args.b, {
      ...(args.paths === undefined ? {} : { paths: args.paths }),
      ...(args.unified_for === undefined ? {} : { unifiedFor: args.unified_for }),
    });
    const listed =
      d.added.length <= MAX_LISTED && d.removed.length <= MAX_LISTED && d.modified.length <= MAX_LISTED;
    return {
      structured: {
        a: d.a,
        b: d.b,
        base: d.base,
        counts: { added: d.added.length, removed: d.removed.length, modified: d.modified.length },
        added: d.added.slice(0, MAX_LISTED).map((e) => one(e, e.b)),
        removed: d.removed.slice(0, MAX_LISTED).map((e) => one(e, e.a)),
        modified: d.modified.slice(0, MAX_LISTED).map((e) => ({
          path: e.path,
          changes: e.changes ?? [],
          a: sideOut(e.a ?? NONE),
          b: sideOut(e.b ?? NONE),
        })),
        truncated: d.truncated || !listed,
        ...(d.unified === undefined ? {} : { unified: d.unified }),
      },
    };
  },
});
