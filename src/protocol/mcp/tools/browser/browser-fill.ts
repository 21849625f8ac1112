import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { pageTool, refArg } from './browser-kit.ts';

export const browserFill = pageTool({
  name: 'browser_fill',
  title: 'Fill',
  description: 'Replace the text of an input or textarea by its ref; returns the new snapshot.',
  annotations: HINTS.write,
  args: { ref: refArg, value: z.string().max(65536) },
  action: (a) => ({ action: 'fill', ref: a.ref, value: a.value }),
});
