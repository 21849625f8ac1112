import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { pageTool, refArg } from './browser-kit.ts';

export const browserWaitFor = pageTool({
  name: 'browser_wait_for',
  title: 'Wait for',
  description: 'Wait until text appears on the page or an element (ref) is visible; returns the snapshot.',
  annotations: HINTS.read,
  args: {
    text: z.string().min(1).max(1024).optional(),
    ref: refArg.optional(),
    timeout_ms: z.number().int().min(1).max(60000).optional().describe('Default 15000'),
  },
  action: (a) => ({
    action: 'wait_for',
    ...(a.text === undefined ? {} : { text: a.text }),
    ...(a.ref === undefined ? {} : { ref: a.ref }),
    ...(a.timeout_ms === undefined ? {} : { timeoutMs: a.timeout_ms }),
  }),
});
