/**
 * `forkbox browser open|snapshot|click|fill|screenshot|events|close ID …`: the sandbox's browser
 * (docs/BROWSER.md). Page actions print the accessibility snapshot with refs; `--json` prints the result.
 */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { BrowserAction, BrowserResult } from '../../domain/browser.ts';
import { defineCommand } from '../command-table.ts';
import type { CliContext } from '../context.ts';

export function register(program: Command, ctx: CliContext): void {
  const browser = defineCommand(program, 'browser');
  const act = async (id: string, a: BrowserAction): Promise<BrowserResult> =>
    (await ctx.api()).browser(id, a);
  // What a page says is printed without its control characters (a page could send escape sequences).
  const clean = (t: string) =>
    [...t]
      .filter((ch) => {
        const c = ch.charCodeAt(0);
        return c === 9 || c === 10 || (c >= 0x20 && c !== 0x7f && (c < 0x80 || c > 0x9f));
      })
      .join('');
  const page = (r: BrowserResult) => clean(`${r.title} — ${r.url}\n${r.snapshot ?? ''}`);

  /** A subcommand that takes the sandbox and `args`, acts, and prints the page's new snapshot. */
  function pageCommand(
    name: string,
    description: string,
    args: [string, string][],
    action: (v: string[]) => BrowserAction,
  ): void {
    const c = browser.command(name).description(description).argument('<id>', 'sandbox id or name');
    for (const [arg, help] of args) c.argument(arg, help);
    c.action(async (id: string, ...rest: unknown[]) => {
      const r = await act(id, action(rest.slice(0, args.length) as string[]));
      ctx.out().result(r, () => page(r));
    });
  }

  pageCommand(
    'open',
    'load a URL in the sandbox’s Chromium (started on first use; an image with it: debian-browser) and print the page’s snapshot',
    [['<url>', 'http(s)://, file:// inside the sandbox, or about:blank']],
    ([url = '']) => ({ action: 'open', url }),
  );
  pageCommand(
    'snapshot',
    'print the open page’s accessibility snapshot, with refs (e12) for click and fill',
    [],
    () => ({ action: 'snapshot' }),
  );
  pageCommand(
    'click',
    'click an element by its ref; prints the new snapshot',
    [['<ref>', 'a ref from the latest snapshot, e.g. e12']],
    ([ref = '']) => ({ action: 'click', ref }),
  );
  pageCommand(
    'fill',
    'replace the text of an input by its ref; prints the new snapshot',
    [
      ['<ref>', 'a ref from the latest snapshot'],
      ['<value>', 'the text'],
    ],
    ([ref = '', value = '']) => ({ action: 'fill', ref, value }),
  );

  browser
    .command('screenshot')
    .description('save a PNG of the open page')
    .argument('<id>', 'sandbox id or name')
    .requiredOption('-o, --output <file>', 'where to write the PNG')
    .option('--full-page', 'the whole page (up to 8000 px high), not the viewport')
    .action(async (id: string, o: { output: string; fullPage?: boolean }) => {
      const r = await act(id, { action: 'screenshot', fullPage: o.fullPage === true });
      const png = Buffer.from(r.screenshot?.base64 ?? '', 'base64');
      writeFileSync(o.output, png);
      const { screenshot: _, ...rest } = r;
      ctx
        .out()
        .result({ ...rest, file: o.output, bytes: png.length }, () => `${o.output} (${png.length} bytes)`);
    });

  browser
    .command('events')
    .description('print the page’s console messages, errors, requests and navigations after a cursor')
    .argument('<id>', 'sandbox id or name')
    .option('--since <seq>', 'the cursor (the last seq seen)', (v: string) => Number.parseInt(v, 10))
    .action(async (id: string, o: { since?: number }) => {
      const r = await act(id, { action: 'events', ...(o.since === undefined ? {} : { since: o.since }) });
      ctx
        .out()
        .result(r, () =>
          (r.events ?? [])
            .map((e) =>
              clean(
                `${e.seq}\t${e.type}\t${e.level ?? e.status ?? ''}\t${e.text ?? ''}${e.url ? ` ${e.url}` : ''}`,
              ),
            )
            .join('\n'),
        );
    });

  browser
    .command('close')
    .description('stop the sandbox’s Chromium')
    .argument('<id>', 'sandbox id or name')
    .action(async (id: string) => {
      const r = await act(id, { action: 'close' });
      ctx.out().result(r, () => (r.closed ? 'closed' : 'no browser was open'));
    });
}
