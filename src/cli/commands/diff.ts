/** `forkbox diff A B [--path P...] [--unified FILE]`: what changed between two sandboxes' files. */
import type { Command } from 'commander';
import type { DiffResult } from '../../service/api.ts';
import type { DiffSide } from '../../service/ports.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { formatBytes, table } from '../output.ts';

const sizeOf = (s: DiffSide | undefined) => (!s ? '' : s.type === 'dir' ? 'dir' : formatBytes(s.size));

/** git's --name-status letters: A added, D deleted, M modified. */
export function renderDiff(d: DiffResult): string {
  const rows: string[][] = [
    ...d.added.map((e) => ({ path: e.path, row: ['A', e.path, sizeOf(e.b), ''] })),
    ...d.removed.map((e) => ({ path: e.path, row: ['D', e.path, sizeOf(e.a), ''] })),
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

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'diff')
    .argument('<a>', 'the "before" sandbox (id or name)')
    .argument('<b>', 'the "after" sandbox (id or name)')
    .option('-p, --path <path...>', 'only paths equal to or under these absolute paths')
    .option('-u, --unified <file>', 'also print a unified diff of this file')
    .action(async (a: string, b: string, o: { path?: string[]; unified?: string }) => {
      const api = await ctx.api();
      const d = await api.diffSandboxes(a, b, {
        ...(o.path === undefined ? {} : { paths: o.path }),
        ...(o.unified === undefined ? {} : { unifiedFor: o.unified }),
      });
      ctx.out().result(d, () => renderDiff(d));
    });
}
