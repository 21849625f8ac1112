import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { pageTool } from './browser-kit.ts';

export const browserNavigate = pageTool({
  name: 'browser_navigate',
  title: 'Back, forward, reload',
  description: "Go back or forward in the page's history, or reload it; returns the snapshot.",
  annotations: HINTS.run,
  args: { to: z.enum(['back', 'forward', 'reload']) },
  action: (a) => ({ action: 'navigate', to: a.to }),
});
