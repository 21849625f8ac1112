/** `forkbox export ID --patch [-o FILE]`: a sandbox's project changes as a patch for `git apply`. */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { errors } from '../../domain/errors.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'export')
    .argument('<id>', 'the sandbox (id or name)')
    .option('--patch', "its project's changes as a patch (git apply, in the host directory)")
    .option('-o, --output <file>', 'write it to this file (default: stdout)')
    .option(
      '-p, --path <path...>',
      'only paths equal to or under these (relative to the project, with a leading /)',
    )
    .action(async (id: string, o: { patch?: boolean; output?: string; path?: string[] }) => {
      if (!o.patch) throw errors.invalid('say what to export: --patch (the only format so far).');
      const d = await (await ctx.api()).diffSandboxes(id, id, {
        project: true,
        patch: true,
        ...(o.path === undefined ? {} : { paths: o.path }),
      });
      if (o.output === undefined) process.stdout.write(d.patch ?? '');
      else writeFileSync(o.output, d.patch ?? '');
    });
}
