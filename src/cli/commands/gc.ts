/** `forkbox gc`: remove what ended sandboxes and crashes left behind. */
import type { Command } from 'commander';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'gc').action(async () => {
    const r = await (await ctx.api()).gc();
    ctx
      .out()
      .result(r, () =>
        [
          `removed ${r.removedSandboxes.length} sandbox(es), ${r.removedMounts.length} mount(s), ` +
            `${r.removedCgroups.length} cgroup(s), ${r.removedDirs.length} dir(s)`,
          ...r.removedSandboxes.map((s) => `  sandbox ${s}`),
          ...r.removedMounts.map((s) => `  mount ${s}`),
          ...r.removedCgroups.map((s) => `  cgroup ${s}`),
          ...r.removedDirs.map((s) => `  dir ${s}`),
        ].join('\n'),
      );
  });
}
