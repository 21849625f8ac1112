/** `forkbox pause ID`: freeze every process of a sandbox. */
import type { Command } from 'commander';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'pause')
    .argument('<id>', 'sandbox id or name')
    .action(async (id: string) => {
      const sb = await (await ctx.api()).pauseSandbox(id);
      ctx.out().result(sb, () => `${sb.id} ${sb.state}`);
    });
}
