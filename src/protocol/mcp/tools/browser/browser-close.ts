import { z } from 'zod';
import { defineTool, HINTS, sandboxArg } from '../../kit/tool-kit.ts';

export const browserClose = defineTool({
  name: 'browser_close',
  title: 'Close the browser',
  description: "Stop the sandbox's Chromium (its memory back to the sandbox). closed=false: none was open.",
  annotations: HINTS.destroy,
  input: z.object({ sandbox: sandboxArg }),
  output: z.object({ closed: z.boolean() }),
  async run(a, { api, sandbox }) {
    const r = await api.browser(await sandbox(a.sandbox), { action: 'close' });
    return { structured: { closed: r.closed === true } };
  },
});
