import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { nameArg } from './shapes.ts';
import { akTool } from './tool.ts';

/** Starting a stopped sandbox is resuming it: its processes carry on where sandbox_stop froze them. */
export const sandboxStart = akTool({
  name: 'sandbox_start',
  title: 'Start a sandbox',
  description: 'Start a stopped sandbox (its processes resume where they were stopped).',
  annotations: HINTS.write,
  input: z.object({ name: nameArg.describe('Name of the sandbox to start') }),
  async run(a, { api }) {
    const s = await api.getSandbox(a.name);
    if (s.state === 'running') return `Sandbox '${a.name}' is already running.`;
    await api.resumeSandbox(s.id);
    return `Sandbox '${a.name}' started.`;
  },
});
