import { z } from 'zod';
import { defineTool, HINTS, sandboxArg } from '../../kit/tool-kit.ts';
import { screenshotContent } from './browser-kit.ts';

export const browserScreenshot = defineTool({
  name: 'browser_screenshot',
  title: 'Screenshot',
  description:
    'A PNG of the open page (the viewport, 1280x800; full_page: the whole page, up to 8000 px high).',
  annotations: HINTS.read,
  input: z.object({ sandbox: sandboxArg, full_page: z.boolean().optional() }),
  output: z.object({ url: z.string(), title: z.string(), bytes: z.number() }),
  async run(a, { api, sandbox }) {
    const r = await api.browser(await sandbox(a.sandbox), {
      action: 'screenshot',
      fullPage: a.full_page === true,
    });
    return {
      structured: { url: r.url, title: r.title, bytes: r.screenshot?.bytes ?? 0 },
      extra: screenshotContent(r),
    };
  },
});
