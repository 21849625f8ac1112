import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { namespaceArg, sandboxArg } from './shapes.ts';
import { msbTool } from './tool.ts';

/** Ends the sandbox: its processes end and its files are removed (microsandbox's `down`). */
export const sandboxStop = msbTool({
  name: 'sandbox_stop',
  title: 'Stop a sandbox',
  description:
    "Stop a running sandbox and clean up its resources. CRITICAL: Always call this when you're finished with a sandbox to prevent resource leaks.",
  annotations: HINTS.destroy,
  input: z.object({
    sandbox: sandboxArg.describe('Name of the sandbox to stop'),
    namespace: namespaceArg,
  }),
  async run(a, { api }) {
    await api.killSandbox(a.sandbox, { namespace: a.namespace });
    return `Sandbox ${a.sandbox} stopped successfully`;
  },
});
