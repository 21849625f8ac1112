/** `forkbox snapshot create|ls|inspect|rm|restore`: named frozen states of sandboxes (files + live REPL). */
import type { Command } from 'commander';
import type { ForkRequest, SnapshotInfo } from '../../service/api.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { formatRelative, table } from '../output/output.ts';
import { parseDurationSeconds, parseSizeMb } from '../parse.ts';

function detail(s: SnapshotInfo): string {
  return [
    `id:            ${s.id}`,
    `name:          ${s.name}`,
    `source:        ${s.source}`,
    `image:         ${s.image}`,
    `created:       ${s.createdAt} (${formatRelative(s.createdAt)})`,
    `python state:  ${s.pythonState ? 'yes (restores bring the REPL back)' : (s.pythonStateLost ?? 'no (files only)')}`,
    `layers:        ${s.layers}`,
    `dependents:    ${s.dependents.length === 0 ? '-' : s.dependents.join(', ')}`,
  ].join('\n');
}

export function register(program: Command, ctx: CliContext): void {
  const snap = defineCommand(program, 'snapshot');

  snap
    .command('create')
    .description('snapshot a running sandbox')
    .argument('<sandbox>', 'sandbox id or name')
    .option('--name <name>', 'snapshot name (default: its id)')
    .action(async (sandbox: string, o: { name?: string }) => {
      const s = await (await ctx.api()).createSnapshot(sandbox, o.name === undefined ? {} : { name: o.name });
      ctx.out().result(s, () => s.id);
    });

  snap
    .command('ls')
    .description('list snapshots')
    .action(async () => {
      const list = await (await ctx.api()).listSnapshots();
      ctx.out().result(list, () =>
        list.length === 0
          ? 'no snapshots'
          : table(
              ['ID', 'NAME', 'SOURCE', 'PYTHON', 'DEPENDENTS', 'CREATED'],
              list.map((s) => [
                s.id,
                s.name,
                s.source,
                s.pythonState ? 'yes' : 'no',
                String(s.dependents.length),
                formatRelative(s.createdAt),
              ]),
            ),
      );
    });

  snap
    .command('inspect')
    .description('show a snapshot')
    .argument('<snapshot>', 'snapshot id or name')
    .action(async (id: string) => {
      const s = await (await ctx.api()).getSnapshot(id);
      ctx.out().result(s, () => detail(s));
    });

  snap
    .command('rm')
    .description('delete a snapshot (refused while sandboxes depend on it, unless --cascade)')
    .argument('<snapshot>', 'snapshot id or name')
    .option('--cascade', 'also kill the sandboxes restored from it')
    .action(async (id: string, o: { cascade?: boolean }) => {
      const r = await (await ctx.api()).deleteSnapshot(id, o.cascade ? { cascade: true } : {});
      ctx.out().result(r, () => [r.deleted, ...r.killed.map((k) => `killed ${k}`)].join('\n'));
    });

  snap
    .command('restore')
    .description('create sandboxes from a snapshot')
    .argument('<snapshot>', 'snapshot id or name')
    .option('-n, --count <n>', 'number of sandboxes (1-100)', (v: string) => Number(v), 1)
    .option('--name <name...>', 'names for the new sandboxes')
    .option('--memory <size>', 'memory limit (default: the snapshot source’s)', parseSizeMb)
    .option('--ttl <duration>', 'TTL, e.g. 30m', parseDurationSeconds)
    .action(async (id: string, o: { count: number; name?: string[]; memory?: number; ttl?: number }) => {
      const req: ForkRequest = { n: o.count };
      if (o.name !== undefined) req.names = o.name;
      if (o.memory !== undefined) req.memoryMb = o.memory;
      if (o.ttl !== undefined) req.ttlSeconds = o.ttl;
      const r = await (await ctx.api()).restoreSnapshot(id, req);
      const out = ctx.out();
      out.result(r, () =>
        r.children
          .map((c) => (c.ok ? (c.sandbox?.id ?? '') : `failed: ${c.error?.message ?? ''}`))
          .join('\n'),
      );
      if (!r.carried.pythonState)
        out.note('files restored; Python state was not (the snapshot no longer holds it)');
    });
}
