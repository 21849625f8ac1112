import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { nameArg } from './shapes.ts';
import { akTool } from './tool.ts';

/**
 * Stopping is pausing: the sandbox's processes are frozen (not ended) and its files kept, so
 * sandbox_start brings back exactly what was running — more than agentkernel's container stop kept.
 */
export const sandboxStop = akTool({
  name: 'sandbox_stop',
  title: 'Stop a sandbox',
  description:
    'Stop a running sandbox, keeping it for later use (its processes are frozen until sandbox_start).',
  annotations: HINTS.write,
  input: z.object({ name: nameArg.describe('Name of the sandbox to stop') }),
  async run(a, { api }) {
    const s = await api.getSandbox(a.name);
    if (s.state === 'paused') return `Sandbox '${a.name}' is already stopped.`;
    await api.pauseSandbox(s.id);
    return `Sandbox '${a.name}' stopped.`;
  },
});
