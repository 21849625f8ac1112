/**
 * agentkernel's six browser tools over forkbox's browser (ForkboxApi.browser, docs/BROWSER.md), with
 * agentkernel's arguments and result shapes: the sandbox by `name` (it must be of an image with
 * Chromium: `debian-browser`), elements by ARIA `ref` or CSS `selector`, results as JSON with the ARIA
 * snapshot (YAML with `[ref=eN]`), url, title and the refs in it. forkbox keeps one page per sandbox:
 * `page` is `default` (another name is refused). The six differ only in their arguments, hence one file.
 */
import { z } from 'zod';
import type { BrowserAction, BrowserResult } from '../../../../domain/browser.ts';
import { ForkboxError } from '../../../../domain/errors.ts';
import type { ForkboxApi } from '../../../../service/api.ts';
import { HINTS, type ToolHints } from '../../kit/tool-kit.ts';
import type { ToolsetTool } from '../../toolset.ts';
import { nameArg } from './shapes.ts';
import { akTool } from './tool.ts';

const text = (what: string) => z.string().max(8192).describe(what);
const page = text("Page name (default: 'default')").optional();
const ref = text("Element ref from ARIA snapshot (e.g. 'e5')").optional();
const selector = text('CSS selector (fallback if ref not available)').optional();
const browserName = nameArg.describe('Name of the browser sandbox');

function onePage(p: string | undefined): void {
  if (p !== undefined && p !== 'default')
    throw new ForkboxError(
      'invalid_argument',
      `forkbox keeps one page per sandbox ('default'), not '${p.slice(0, 64)}': use another sandbox (sandbox_create) for another page.`,
    );
}

/** agentkernel's page result: the snapshot, url, title and the refs the snapshot names. */
function pageResult(r: BrowserResult) {
  const snapshot = r.snapshot ?? '';
  const refs = [...snapshot.matchAll(/\[ref=((?:f\d+)?e\d+)\]/g)].map((m) => m[1]);
  return { snapshot, url: r.url, title: r.title, refs };
}

function target(a: { ref?: string | undefined; selector?: string | undefined }) {
  if (a.ref !== undefined && a.ref !== '') return { ref: a.ref };
  if (a.selector !== undefined && a.selector !== '') return { selector: a.selector };
  throw new ForkboxError('invalid_argument', 'give ref (from the ARIA snapshot) or selector.');
}

function browserTool<I extends z.ZodObject>(def: {
  name: string;
  title: string;
  description: string;
  annotations: ToolHints;
  input: I;
  run(a: z.output<I>, api: ForkboxApi, act: (a: BrowserAction) => Promise<BrowserResult>): Promise<unknown>;
}): ToolsetTool {
  return akTool({
    ...def,
    async run(a, { api }) {
      const args = a as { name: string; page?: string };
      onePage(args.page);
      return def.run(a, api, (action) => api.browser(args.name, action));
    },
  });
}

export const browserOpen = browserTool({
  name: 'browser_open',
  title: 'Open a page',
  description: 'Navigate to a URL and get an ARIA snapshot of the page.',
  annotations: HINTS.run,
  input: z.object({ name: browserName, url: text('URL to navigate to'), page }),
  run: async (a, _api, act) => pageResult(await act({ action: 'open', url: a.url })),
});
export const browserSnapshot = browserTool({
  name: 'browser_snapshot',
  title: 'Page snapshot',
  description: 'Get the current ARIA snapshot of a page without navigating.',
  annotations: HINTS.read,
  input: z.object({ name: browserName, page }),
  run: async (_a, _api, act) => pageResult(await act({ action: 'snapshot' })),
});
export const browserClick = browserTool({
  name: 'browser_click',
  title: 'Click',
  description: 'Click an element by ref ID (from ARIA snapshot) or CSS selector.',
  annotations: HINTS.run,
  input: z.object({ name: browserName, ref, selector, page }),
  run: async (a, _api, act) => pageResult(await act({ action: 'click', ...target(a) })),
});
export const browserFill = browserTool({
  name: 'browser_fill',
  title: 'Fill',
  description: 'Fill an input field by ref ID (from ARIA snapshot) or CSS selector with a value.',
  annotations: HINTS.run,
  input: z.object({ name: browserName, ref, selector, value: text('Value to fill into the input'), page }),
  run: async (a, _api, act) => pageResult(await act({ action: 'fill', value: a.value, ...target(a) })),
});
export const browserClose = browserTool({
  name: 'browser_close',
  title: 'Close a page',
  description: 'Close a named browser page.',
  annotations: HINTS.run,
  input: z.object({ name: browserName, page: text("Page name to close (default: 'default')").optional() }),
  run: async (a, _api, act) => {
    const r = await act({ action: 'close' });
    return { closed: r.closed === true, page: a.page ?? 'default' };
  },
});
export const browserEvents = browserTool({
  name: 'browser_events',
  title: 'Browser events',
  description: 'Get browser event history for debugging and context recovery.',
  annotations: HINTS.run,
  input: z.object({
    name: browserName,
    offset: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('Return events after this sequence number (default: 0)'),
    limit: z.number().int().min(1).max(1000).optional().describe('Maximum events to return (default: 100)'),
  }),
  run: async (a, _api, act) => {
    const r = await act({ action: 'events', since: a.offset ?? 0, limit: a.limit ?? 100 });
    return { events: r.events ?? [], next_offset: r.next ?? 0, dropped: r.dropped ?? 0 };
  },
});
