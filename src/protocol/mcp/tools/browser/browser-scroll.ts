import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { pageTool, refArg } from './browser-kit.ts';

export const browserScroll = pageTool({
  name: 'browser_scroll',
  title: 'Scroll',
  description: 'Scroll an element into view by ref, or the page by dy pixels (default one screen down).',
  annotations: HINTS.write,
  args: { ref: refArg.optional(), dy: z.number().int().min(-100000).max(100000).optional() },
  action: (a) => ({
    action: 'scroll',
    ...(a.ref === undefined ? {} : { ref: a.ref }),
    ...(a.dy === undefined ? {} : { dy: a.dy }),
  }),
});
