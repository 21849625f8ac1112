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

  browser
    .command('open')
    .description('load a URL in the sandbox’s Chromium (started on first use) and print the page’s snapshot')
    .argument('<id>', 'sandbox id or name (of an image with Chromium: debian-browser)')
    .argument('<url>', 'http(s)://, file:// inside the sandbox, or about:blank')
    .action(async (id: string, url: string) => {
      const r = await act(id, { action: 'open', url });
      ctx.out().result(r, () => page(r));
    });

  browser
    .command('snapshot')
    .description('print the open page’s accessibility snapshot, with refs (e12) for click and fill')
    .argument('<id>', 'sandbox id or name')
    .action(async (id: string) => {
      const r = await act(id, { action: 'snapshot' });
      ctx.out().result(r, () => page(r));
    });

  browser
    .command('click')
    .description('click an element by its ref; prints the new snapshot')
    .argument('<id>', 'sandbox id or name')
    .argument('<ref>', 'a ref from the latest snapshot, e.g. e12')
    .action(async (id: string, ref: string) => {
      const r = await act(id, { action: 'click', ref });
      ctx.out().result(r, () => page(r));
    });

  browser
    .command('fill')
    .description('replace the text of an input by its ref; prints the new snapshot')
    .argument('<id>', 'sandbox id or name')
    .argument('<ref>', 'a ref from the latest snapshot')
    .argument('<value>', 'the text')
    .action(async (id: string, ref: string, value: string) => {
      const r = await act(id, { action: 'fill', ref, value });
      ctx.out().result(r, () => page(r));
    });

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
