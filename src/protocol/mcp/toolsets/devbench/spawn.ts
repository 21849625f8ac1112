import { createHash } from 'node:crypto';
import { z } from 'zod';
import { LIMITS } from '../../../../domain/limits.ts';
import type { ForkboxApi } from '../../../../service/api.ts';
import { createKeyedQueue } from '../../../../util/keyed-queue.ts';
import { boundedNumber } from '../../../bounds.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { auditEvent } from './audit.ts';
import { devbenchErrorText } from './errors.ts';
import { inputData } from './shapes.ts';
import { WORKSPACE } from './workspace.ts';

/** Label holding a hash of spawn's idempotency key (DevBench kept the key on its container row). */
export const SPAWN_KEY_LABEL = 'devbench.spawn-key';
const spawns = createKeyedQueue();

/** A local image by name, else a registry reference pulled through forkbox's images (--image-allow). */
async function localImage(api: ForkboxApi, image: string): Promise<string> {
  const images = await api.listImages();
  if (images.some((i) => i.name === image)) return image;
  return (await api.pullImage(image)).name;
}

export const spawn = compatTool(
  {
    name: 'spawn',
    title: 'Spawn container',
    description:
      'Create and start a new container (a forkbox sandbox with a /workspace directory). The same idempotency_key again returns the first container.',
    annotations: HINTS.create,
    input: inputData({
      image: z.string().min(1).max(512).describe('Docker image reference'),
      persistent: z.boolean().default(false).describe('Whether container is persistent'),
      alias: z.string().min(1).max(63).optional().describe('Optional user-friendly alias'),
      ttl_s: boundedNumber(LIMITS.ttlSeconds).optional().describe('Time to live in seconds for transient'),
      idempotency_key: z.string().min(1).max(256).optional().describe('Prevents a second container on retry'),
    }),
    async run({ input_data: a }, { api, log }) {
      const key = a.idempotency_key;
      const hash =
        key === undefined ? undefined : createHash('sha256').update(key).digest('hex').slice(0, 32);
      const make = async () => {
        if (hash !== undefined) {
          const [found] = await api.listSandboxes({ labels: { [SPAWN_KEY_LABEL]: hash } });
          if (found) return { container_id: found.id, alias: a.alias ?? null, status: 'running' };
        }
        const image = await localImage(api, a.image);
        const s = await api.createSandbox({
          image,
          persistent: a.persistent,
          ...(a.alias === undefined ? {} : { name: a.alias }),
          ...(a.ttl_s === undefined ? {} : { ttlSeconds: a.ttl_s }),
          ...(hash === undefined ? {} : { labels: { [SPAWN_KEY_LABEL]: hash } }),
        });
        await api.mkdir(s.id, WORKSPACE);
        auditEvent(log, 'container_spawn', {
          container_id: s.id,
          details: { image: a.image, persistent: a.persistent, alias: a.alias ?? null },
        });
        return { container_id: s.id, alias: a.alias ?? null, status: 'running' };
      };
      return hash === undefined ? make() : spawns.run(hash, make);
    },
  },
  devbenchErrorText,
);
