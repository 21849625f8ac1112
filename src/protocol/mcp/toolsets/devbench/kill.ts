import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { detachAll } from './attach.ts';
import { auditEvent } from './audit.ts';
import { devbenchErrorText } from './errors.ts';
import { containerIdArg, inputData } from './shapes.ts';

/** `force` is accepted and changes nothing: a forkbox kill ends the sandbox at once (no 10 s stop). */
export const kill = compatTool(
  {
    name: 'kill',
    title: 'Kill container',
    description: 'Stop and remove a container (at once; force changes nothing).',
    annotations: HINTS.destroy,
    input: inputData({
      container_id: containerIdArg,
      force: z.boolean().default(false).describe('Force removal without graceful stop (ignored)'),
    }),
    async run({ input_data: a }, { api, log }) {
      const s = await api.killSandbox(a.container_id);
      detachAll(s.id);
      auditEvent(log, 'container_kill', { container_id: s.id, details: { force: a.force } });
      return { status: 'stopped' };
    },
  },
  devbenchErrorText,
);
