import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { pageTool, refArg } from './browser-kit.ts';

export const browserPress = pageTool({
  name: 'browser_press',
  title: 'Press a key',
  description: 'Press a key (Enter, Tab, Control+A, a) on an element by ref, or on the focused one.',
  annotations: HINTS.run,
  args: { key: z.string().min(1).max(64), ref: refArg.optional() },
  action: (a) => ({ action: 'press', key: a.key, ...(a.ref === undefined ? {} : { ref: a.ref }) }),
});
