import { z } from 'zod';
import { defineTool, HINTS } from '../kit/tool-kit.ts';

export const imageList = defineTool({
  name: 'image_list',
  title: 'List images',
  description: 'Images sandbox_create can use.',
  annotations: HINTS.read,
  input: z.object({}),
  output: z.object({
    images: z.array(
      z.object({ name: z.string(), size_bytes: z.number(), source: z.string(), created_at: z.string() }),
    ),
  }),
  async run(_a, { api }) {
    const images = await api.listImages();
    return {
      structured: {
        images: images.map((i) => ({
          name: i.name,
          size_bytes: i.sizeBytes,
          source: i.source,
          created_at: new Date(i.createdAt).toISOString(),
        })),
      },
    };
  },
});
