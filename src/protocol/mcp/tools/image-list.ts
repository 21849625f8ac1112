import { z } from 'zod';
import { listTool } from '../kit/list-tool.ts';

export const imageList = listTool({
  name: 'image_list',
  title: 'List images',
  description: 'Images sandbox_create can use.',
  key: 'images',
  item: z.object({ name: z.string(), size_bytes: z.number(), source: z.string(), created_at: z.string() }),
  list: (api) => api.listImages(),
  out: (i) => ({
    name: i.name,
    size_bytes: i.sizeBytes,
    source: i.source,
    created_at: new Date(i.createdAt).toISOString(),
  }),
});
