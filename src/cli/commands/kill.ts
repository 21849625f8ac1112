/** `forkbox kill ID...`. */
import type { Command } from 'commander';
import type { SandboxInfo } from '../../service/api.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { exitCodeFor } from '../output/output.ts';

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'kill')
    .argument('<ids...>', 'sandbox ids or names')
    .option('--cascade', 'also kill their descendants (forks); by default children keep running')
    .option(
      '-n, --namespace <ns>',
      'the namespace names are looked up in (default: default; or write NS/NAME)',
    )
    .action(async (ids: string[], opts: { cascade?: boolean; namespace?: string }) => {
      const api = await ctx.api();
      const out = ctx.out();
      const killed: SandboxInfo[] = [];
      let firstError: unknown;
      // Kill every one we can; report each failure, exit with the first one's code.
      for (const id of ids) {
        try {
          killed.push(
            await api.killSandbox(id, {
              ...(opts.cascade ? { cascade: true } : {}),
              ...(opts.namespace === undefined ? {} : { namespace: opts.namespace }),
            }),
          );
        } catch (e) {
          firstError ??= e;
          if (ids.length > 1) out.note(`${id}: ${(e as Error).message}`);
        }
      }
      out.result(killed, () => killed.map((s) => s.id).join('\n'));
      if (firstError !== undefined) {
        if (ids.length > 1) ctx.setExitCode(exitCodeFor(firstError));
        else throw firstError;
      }
    });
}
