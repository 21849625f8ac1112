import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { pageTool } from './browser-kit.ts';

export const browserOpen = pageTool({
  name: 'browser_open',
  title: 'Open a page',
  description:
    "Load a URL in the sandbox's Chromium (started on first use; needs a sandbox of image debian-browser). http://localhost:PORT reaches servers in the sandbox; the sandbox's network policy applies. Returns the page's accessibility snapshot with refs (e12) for the other browser tools.",
  annotations: HINTS.run,
  args: {
    url: z.string().min(1).max(8192).describe('http(s)://, file:// (inside the sandbox) or about:blank'),
  },
  action: (a) => ({ action: 'open', url: a.url }),
});
