/** `forkbox merge PARENT WINNER`: keep a fork; it takes over the parent's id and name. */
import type { Command } from 'commander';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'merge')
    .argument('<parent>', 'the sandbox to replace')
    .argument('<winner>', 'the fork to keep (a descendant of parent)')
    .action(async (parent: string, winner: string) => {
      const r = await (await ctx.api()).mergeSandbox(parent, winner);
      ctx.out().result(r, () => `${r.sandbox.id} now runs what was ${r.winner}`);
    });
}
