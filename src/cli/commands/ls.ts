/** `forkbox ls`: list sandboxes. */
import type { Command } from 'commander';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { sandboxTable } from '../render.ts';

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'ls')
    .option('-a, --all', 'include ended sandboxes')
    .action(async (o: { all?: boolean }) => {
      const list = await (await ctx.api()).listSandboxes(o.all ? { all: true } : {});
      ctx.out().result(list, () => sandboxTable(list));
    });
}
