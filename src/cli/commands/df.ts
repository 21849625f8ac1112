/** `forkbox df`: disk used by images and sandboxes, and what the state dir's filesystem has left. */
import type { Command } from 'commander';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { formatBytes, table } from '../output/output.ts';

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
          ...(d.filesystem
            ? [
                `filesystem ${formatBytes(d.filesystem.sizeBytes)}, ${formatBytes(d.filesystem.freeBytes)} free` +
                  (d.filesystem.promisedBytes > 0
                    ? `, of which ${formatBytes(d.filesystem.promisedBytes)} is kept for what sandboxes' disks may still write`
                    : ''),
              ]
            : []),
        ].join('\n'),
      );
  });
}
