import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { pageTool, refArg } from './browser-kit.ts';

export const browserSelect = pageTool({
  name: 'browser_select',
  title: 'Select',
  description: 'Choose options of a select element by its ref (by value or label); returns the new snapshot.',
  annotations: HINTS.write,
  args: { ref: refArg, values: z.array(z.string().max(1024)).min(1).max(64) },
  action: (a) => ({ action: 'select', ref: a.ref, values: a.values }),
});
