import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { forkdErrorText } from './errors.ts';
import { liveSandbox } from './live.ts';
import { sandboxIdArg } from './shapes.ts';

export const killSandbox = compatTool(
  {
    name: 'kill_sandbox',
    title: 'Kill sandbox',
    description: 'Terminate one sandbox (sandboxes spawned from it keep running).',
    annotations: HINTS.destroy,
    input: z.object({ sandbox_id: sandboxIdArg }),
    async run(a, { api }) {
      const s = await liveSandbox(api, a.sandbox_id);
      await api.killSandbox(s.id);
      return { id: s.id, killed: true };
    },
  },
  forkdErrorText,
);
