/** `forkbox diff A B [--path P...] [--unified FILE]`: what changed between two sandboxes' files. */
import type { Command } from 'commander';
import { errors } from '../../domain/errors.ts';
import type { DiffResult } from '../../service/api.ts';
import type { DiffSide } from '../../service/ports.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { formatBytes, table } from '../output/output.ts';

const sizeOf = (s: DiffSide | undefined) => (!s ? '' : s.type === 'dir' ? 'dir' : formatBytes(s.size));

/** git's --name-status letters: A added, D deleted, M modified, R renamed (a project's exact moves). */
export function renderDiff(d: DiffResult): string {
  const rows: string[][] = [
    ...d.added.map((e) => ({ path: e.path, row: ['A', e.path, sizeOf(e.b), ''] })),
    ...d.removed.map((e) => ({ path: e.path, row: ['D', e.path, sizeOf(e.a), ''] })),
    ...(d.renamed ?? []).map((r) => ({ path: r.to, row: ['R', `${r.from} → ${r.to}`, sizeOf(r.b), ''] })),
    ...d.modified.map((e) => ({
      path: e.path,
      row: ['M', e.path, `${sizeOf(e.a)} → ${sizeOf(e.b)}`, (e.changes ?? []).join(',')],
    })),
  ]
    .sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0))
    .map((x) => x.row);
  const parts: string[] = [];
  parts.push(
    rows.length === 0
      ? `no differences between ${d.a} and ${d.b}`
      : table(['', 'PATH', 'SIZE', 'WHAT'], rows),
  );
  if (d.truncated) parts.push('(incomplete: too many entries to compare; narrow it with --path)');
  if (d.unified !== undefined)
    parts.push(d.unified === '' ? '(the file is the same in both)' : d.unified.trimEnd());
  return parts.join('\n');
}

/** Append every further page of the diff to `d` (the daemon answers at most 10,000 entries at a time). */
async function followPages(d: DiffResult, next: (cursor: string) => Promise<DiffResult>): Promise<void> {
  let cursor = d.nextCursor ?? null;
  while (cursor !== null) {
    const p = await next(cursor);
    for (const e of p.added) d.added.push(e);
    for (const e of p.removed) d.removed.push(e);
    for (const e of p.modified) d.modified.push(e);
    if (p.renamed) {
      const renamed = d.renamed ?? [];
      for (const e of p.renamed) renamed.push(e);
      d.renamed = renamed;
    }
    cursor = p.nextCursor ?? null;
  }
  d.nextCursor = null;
}

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'diff')
    .argument('<a>', 'the "before" sandbox (id or name); with --project, the sandbox')
    .argument('[b]', 'the "after" sandbox (id or name)')
    .option('-p, --path <path...>', 'only paths equal to or under these absolute paths')
    .option('-u, --unified <file>', 'also print a unified diff of this file')
    .option('--project', "the sandbox's project against its host directory (paths relative to it)")
    .option('--patch', 'with --project: print a patch for git apply instead of the listing')
    .action(
      async (
        a: string,
        b: string | undefined,
        o: { path?: string[]; unified?: string; project?: boolean; patch?: boolean },
      ) => {
        if (b === undefined && !o.project) throw errors.invalid('give two sandboxes, or one with --project.');
        const api = await ctx.api();
        const d = await api.diffSandboxes(a, b ?? a, {
          ...(o.path === undefined ? {} : { paths: o.path }),
          ...(o.unified === undefined ? {} : { unifiedFor: o.unified }),
          ...(o.project ? { project: true } : {}),
          ...(o.patch ? { patch: true } : {}),
        });
        await followPages(d, (cursor) => api.diffSandboxes(a, b ?? a, { cursor }));
        if (o.patch) process.stdout.write(d.patch ?? '');
        else ctx.out().result(d, () => renderDiff(d));
      },
    );
}
