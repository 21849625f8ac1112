import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { forkdErrorText } from './errors.ts';
import { liveSandbox } from './live.ts';
import { forkdSandbox, sandboxIdArg } from './shapes.ts';

export const getSandbox = compatTool(
  {
    name: 'get_sandbox',
    title: 'Get sandbox',
    description: 'Inspect one live sandbox.',
    annotations: HINTS.read,
    input: z.object({ sandbox_id: sandboxIdArg }),
    async run(a, { api }) {
      return forkdSandbox(await liveSandbox(api, a.sandbox_id));
    },
  },
  forkdErrorText,
);
