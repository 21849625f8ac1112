/** `forkbox templates define|ls|rm`: named template configs (an image + Python modules to pre-import). */
import type { Command } from 'commander';
import type { DefineTemplateRequest } from '../../service/api.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';
import { formatRelative, table } from '../output/output.ts';
import { parsePoolSize } from '../parse.ts';

/** `--prewarm a,b --prewarm c` → ['a', 'b', 'c']. */
function collectModules(v: string, prev: string[] = []): string[] {
  return [
    ...prev,
    ...v
      .split(',')
      .map((m) => m.trim())
      .filter((m) => m !== ''),
  ];
}

export function register(program: Command, ctx: CliContext): void {
  const tpl = defineCommand(program, 'templates');

  tpl
    .command('define')
    .description('define (or replace) a template')
    .argument('<name>', 'template name (use it with `forkbox create --template NAME`)')
    .option('--image <name>', 'image (default: the daemon default)')
    .option(
      '--prewarm <modules>',
      'Python modules to pre-import, comma-separated (repeatable), e.g. json,sqlite3',
      collectModules,
    )
    .option(
      '--pool <n>',
      "sandboxes kept ready so creates from it start at once (0 = none; default: the daemon's --pool)",
      parsePoolSize,
    )
    .action(async (name: string, o: { image?: string; prewarm?: string[]; pool?: number }) => {
      const req: DefineTemplateRequest = { name };
      if (o.image !== undefined) req.image = o.image;
      if (o.prewarm !== undefined) req.prewarm = o.prewarm;
      if (o.pool !== undefined) req.pool = o.pool;
      const t = await (await ctx.api()).defineTemplate(req);
      ctx.out().result(t, () => t.name);
    });

  tpl
    .command('ls')
    .description('list templates')
    .action(async () => {
      const list = await (await ctx.api()).listTemplates();
      ctx.out().result(list, () =>
        table(
          ['NAME', 'IMAGE', 'PREWARM', 'POOL', 'UPDATED'],
          list.map((t) => [
            t.name,
            t.image,
            t.prewarm.length === 0 ? '-' : t.prewarm.join(','),
            t.pool === null ? 'default' : String(t.pool),
            t.builtin ? 'built-in' : formatRelative(t.updatedAt),
          ]),
        ),
      );
    });

  tpl
    .command('rm')
    .description('delete a template (refused while live sandboxes use it)')
    .argument('<name>', 'template name')
    .action(async (name: string) => {
      const r = await (await ctx.api()).deleteTemplate(name);
      ctx.out().result(r, () => r.deleted);
    });
}
