import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { devbenchErrorText } from './errors.ts';

/** `docker_id` and `last_seen` are null: there is no Docker container, and forkbox does not track sightings. */
export const listContainers = compatTool(
  {
    name: 'list_containers',
    title: 'List containers',
    description: 'List your containers (running and paused sandboxes).',
    annotations: HINTS.read,
    input: z.object({}),
    async run(_a, { api }) {
      const all = await api.listSandboxes();
      return {
        containers: all.map((s) => ({
          id: s.id,
          docker_id: null,
          alias: s.name === s.id ? null : s.name,
          image: s.image,
          status: s.state,
          persistent: s.persistent,
          created_at: s.createdAt,
          last_seen: null,
        })),
      };
    },
  },
  devbenchErrorText,
);
