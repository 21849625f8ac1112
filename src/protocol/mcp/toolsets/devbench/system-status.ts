import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { attachmentsOf } from './attach.ts';
import { devbenchErrorText } from './errors.ts';

export const systemStatus = compatTool(
  {
    name: 'system_status',
    title: 'System status',
    description: 'System health: engine status, active containers and attachments, version.',
    annotations: HINTS.read,
    input: z.object({}),
    async run(_a, { api }) {
      const [s, live] = await Promise.all([api.status(), api.listSandboxes()]);
      const running = live.filter((x) => x.state === 'running');
      return {
        status: 'healthy',
        docker_connected: true,
        database_initialized: true,
        active_containers: running.length,
        active_attachments: attachmentsOf(live.map((x) => x.id)),
        version: s.version,
      };
    },
  },
  devbenchErrorText,
);
