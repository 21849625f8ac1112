import { HINTS } from '../../kit/tool-kit.ts';
import { pageTool, refArg } from './browser-kit.ts';

export const browserClick = pageTool({
  name: 'browser_click',
  title: 'Click',
  description: 'Click an element by its ref; returns the new snapshot.',
  annotations: HINTS.run,
  args: { ref: refArg },
  action: (a) => ({ action: 'click', ref: a.ref }),
});
