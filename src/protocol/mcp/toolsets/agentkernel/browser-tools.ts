/**
 * agentkernel's six browser tools (ARIA snapshots over a Playwright server in the sandbox), advertised
 * with their exact schemas so that clients built on agentkernel's tool list load unchanged. forkbox's
 * browser sandboxes land with the browser issue: until then every call answers one clear error saying so.
 * The six differ only in their arguments, hence one file.
 */
import { z } from 'zod';
import { ForkboxError } from '../../../../domain/errors.ts';
import { HINTS } from '../../tool-kit.ts';
import type { ToolsetTool } from '../../toolset.ts';
import { nameArg } from './shapes.ts';
import { akTool } from './tool.ts';

const text = (what: string) => z.string().max(8192).describe(what);
const page = text("Page name (default: 'default')").optional();
const ref = text("Element ref from ARIA snapshot (e.g. 'e5')").optional();
const selector = text('CSS selector (fallback if ref not available)').optional();
const browserName = nameArg.describe('Name of the browser sandbox');

function browserTool(name: string, title: string, description: string, input: z.ZodObject): ToolsetTool {
  return akTool({
    name,
    title,
    description: `${description} Not available yet in forkbox: browser sandboxes come with forkbox's browser support.`,
    annotations: HINTS.run,
    input,
    async run() {
      throw new ForkboxError(
        'unavailable',
        `${name} is not available yet: forkbox's browser sandboxes (Playwright + Chromium) land with its browser support, which this server does not have. Fetch pages with sandbox_exec meanwhile (e.g. ["python3", "-c", "import urllib.request; …"]) where the sandbox has network access.`,
      );
    },
  });
}

export const browserOpen = browserTool(
  'browser_open',
  'Open a page',
  'Navigate to a URL and get an ARIA snapshot of the page.',
  z.object({ name: browserName, url: text('URL to navigate to'), page }),
);
export const browserSnapshot = browserTool(
  'browser_snapshot',
  'Page snapshot',
  'Get the current ARIA snapshot of a page without navigating.',
  z.object({ name: browserName, page }),
);
export const browserClick = browserTool(
  'browser_click',
  'Click',
  'Click an element by ref ID (from ARIA snapshot) or CSS selector.',
  z.object({ name: browserName, ref, selector, page }),
);
export const browserFill = browserTool(
  'browser_fill',
  'Fill',
  'Fill an input field by ref ID (from ARIA snapshot) or CSS selector with a value.',
  z.object({ name: browserName, ref, selector, value: text('Value to fill into the input'), page }),
);
export const browserClose = browserTool(
  'browser_close',
  'Close a page',
  'Close a named browser page.',
  z.object({ name: browserName, page: text("Page name to close (default: 'default')").optional() }),
);
export const browserEvents = browserTool(
  'browser_events',
  'Browser events',
  'Get browser event history for debugging and context recovery.',
  z.object({
    name: browserName,
    offset: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('Return events after this sequence number (default: 0)'),
    limit: z.number().int().min(1).max(1000).optional().describe('Maximum events to return (default: 100)'),
  }),
);
