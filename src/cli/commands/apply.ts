/**
 * `forkbox apply ID`: write a sandbox's project changes back to its host directory. Host-side (the
 * daemon's socket only) and explicit; refused, with nothing written, when the host changed a changed
 * path since the sandbox was created.
 */
import type { Command } from 'commander';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'apply')
    .argument('<id>', 'the sandbox (id or name)')
    .action(async (id: string) => {
      const r = await (await ctx.api()).applyProject(id);
      ctx
        .out()
        .result(
          r,
          () =>
            `${r.project}: ${r.written.length} written, ${r.removed.length} removed` +
            [...r.written.map((p) => `\n  W ${p}`), ...r.removed.map((p) => `\n  D ${p}`)].join(''),
        );
    });
}
