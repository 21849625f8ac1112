/** `forkbox resume ID`: thaw a paused sandbox. */
import type { Command } from 'commander';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'resume')
    .argument('<id>', 'sandbox id or name')
    .action(async (id: string) => {
      const sb = await (await ctx.api()).resumeSandbox(id);
      ctx.out().result(sb, () => `${sb.id} ${sb.state}`);
    });
}
