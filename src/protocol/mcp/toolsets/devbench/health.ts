import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { devbenchErrorText } from './errors.ts';

/** `docker_connected` says whether forkbox's engine answered (there is no Docker daemon). */
export const health = compatTool(
  {
    name: 'health',
    title: 'Health',
    description: 'Health check: server status and whether the sandbox engine answers.',
    annotations: HINTS.read,
    input: z.object({}),
    async run(_a, { api }) {
      const s = await api.status().then(
        (x) => x,
        () => null,
      );
      return {
        status: s ? 'healthy' : 'degraded',
        docker_connected: s !== null,
        database_initialized: true,
        version: s?.version ?? 'unknown',
      };
    },
  },
  devbenchErrorText,
);
