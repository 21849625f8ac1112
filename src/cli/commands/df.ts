/** `forkbox df`: disk used by images and sandboxes. */
import type { Command } from 'commander';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { formatBytes, table } from '../output.ts';

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'df').action(async () => {
    const d = await (await ctx.api()).df();
    ctx
      .out()
      .result(d, () =>
        [
          table(
            ['KIND', 'NAME', 'SIZE'],
            [
              ...d.images.map((i) => ['image', i.name, formatBytes(i.bytes)]),
              ...d.sandboxes.map((s) => ['sandbox', s.id, formatBytes(s.bytes)]),
            ],
          ),
          `total ${formatBytes(d.totalBytes)} in ${d.stateDir}`,
        ].join('\n'),
      );
  });
}
