/** `forkbox inspect ID`: one sandbox in detail, with resource usage when it is live. */
import type { Command } from 'commander';
import type { SandboxInfo } from '../../service/api.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { sandboxDetail } from '../output/render.ts';

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'inspect')
    .argument('<id>', 'sandbox id or name')
    .action(async (id: string) => {
      const api = await ctx.api();
      let sb: SandboxInfo;
      try {
        sb = await api.getSandbox(id, { usage: true });
      } catch {
        // Usage needs a live sandbox; an ended one is still worth showing (a real not_found rethrows below).
        sb = await api.getSandbox(id);
      }
      ctx.out().result(sb, () => sandboxDetail(sb));
    });
}
