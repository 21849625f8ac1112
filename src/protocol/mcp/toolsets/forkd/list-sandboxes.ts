import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { forkdErrorText } from './errors.ts';
import { forkdSandbox } from './shapes.ts';

export const listSandboxes = compatTool(
  {
    name: 'list_sandboxes',
    title: 'List sandboxes',
    description: 'List live sandboxes.',
    annotations: HINTS.read,
    input: z.object({}),
    async run(_a, { api }) {
      return (await api.listSandboxes())
        .filter((s) => s.state === 'running' || s.state === 'paused')
        .map(forkdSandbox);
    },
  },
  forkdErrorText,
);
