/** `forkbox ls`: list sandboxes (of one namespace, or of all with `--namespace '*'`). */
import type { Command } from 'commander';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { sandboxTable } from '../output/render.ts';

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'ls')
    .option('-a, --all', 'include ended sandboxes')
    .option('-n, --namespace <ns>', "list this namespace, or '*' for all (default: default)")
    .action(async (o: { all?: boolean; namespace?: string }) => {
      const list = await (await ctx.api()).listSandboxes({
        ...(o.all ? { all: true } : {}),
        ...(o.namespace === undefined ? {} : { namespace: o.namespace }),
      });
      ctx.out().result(list, () => sandboxTable(list));
    });
}
