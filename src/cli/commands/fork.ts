/** `forkbox fork ID [-n N]`: branch a running sandbox, its files and live Python REPL, into N children. */
import type { Command } from 'commander';
import { ForkboxError } from '../../domain/errors.ts';
import { parseDiskSpec } from '../../domain/sizes.ts';
import type { ForkRequest } from '../../service/api.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { exitCodeFor } from '../output/output.ts';
import { parseDurationSeconds, parseSizeMb } from '../parse.ts';
import { diskRequest } from './limit-options.ts';

function count(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 100) {
    throw new ForkboxError('invalid_argument', `-n must be a whole number from 1 to 100, not '${v}'.`);
  }
  return n;
}

export function register(program: Command, ctx: CliContext): void {
  defineCommand(program, 'fork')
    .argument('<id>', 'sandbox id or name')
    .option('-n, --count <n>', 'number of children (1-100)', count, 1)
    .option('--name <name...>', 'names for the children (as many as -n)')
    .option('--memory <size>', "children's memory limit (default: the source's)", parseSizeMb)
    .option(
      '--disk <size[,inodes]>',
      "children's disk limit, e.g. 2g or 2g,100k (default: the source's; it covers a child's own writes)",
      parseDiskSpec,
    )
    .option(
      '--ttl <duration>',
      "children's TTL, e.g. 30m (default: what is left of the source's)",
      parseDurationSeconds,
    )
    .option('--no-wait', 'fail at once if the REPL is busy instead of waiting for it')
    .action(
      async (
        id: string,
        o: {
          count: number;
          name?: string[];
          memory?: number;
          disk?: { bytes: number; inodes?: number };
          ttl?: number;
          wait: boolean;
        },
      ) => {
        const api = await ctx.api();
        const req: ForkRequest = { n: o.count, wait: o.wait };
        if (o.name !== undefined) req.names = o.name;
        if (o.memory !== undefined) req.memoryMb = o.memory;
        Object.assign(req, diskRequest(o.disk));
        if (o.ttl !== undefined) req.ttlSeconds = o.ttl;
        const r = await api.forkSandbox(id, req);
        const out = ctx.out();
        out.result(r, () =>
          [
            ...r.children.map((c) =>
              c.ok ? (c.sandbox?.id ?? '') : `failed: ${c.error?.message ?? 'unknown error'}`,
            ),
          ].join('\n'),
        );
        out.note(
          `paused ${r.source} for ${r.pauseMs} ms (${r.driver} snapshot ${r.snapshotMs} ms); ${r.carried.pythonState ? 'files and Python state carried' : 'files carried, Python state NOT carried'}`,
        );
        const failed = r.children.find((c) => !c.ok);
        if (failed)
          ctx.setExitCode(exitCodeFor(new ForkboxError('internal', failed.error?.message ?? 'fork failed')));
      },
    );
}
