import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { nameArg } from './shapes.ts';
import { akTool } from './tool.ts';

export const sandboxRemove = akTool({
  name: 'sandbox_remove',
  title: 'Remove a sandbox',
  description: 'Remove a sandbox (its processes end and its files are deleted).',
  annotations: HINTS.destroy,
  input: z.object({ name: nameArg.describe('Name of the sandbox to remove') }),
  async run(a, { api }) {
    await api.killSandbox(a.name);
    return `Sandbox '${a.name}' removed.`;
  },
});
