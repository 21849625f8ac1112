import { z } from 'zod';
import { sandboxOut, sandboxShape } from '../shapes.ts';
import { defineTool, HINTS } from '../tool-kit.ts';

export const sandboxList = defineTool({
  name: 'sandbox_list',
  title: 'List sandboxes',
  description:
    'List sandboxes with their state, image, limits, labels and expiry. Live ones only unless `all` is true (then ended ones too).',
  annotations: HINTS.read,
  input: z.object({
    all: z.boolean().optional().describe('Include killed, failed and lost sandboxes.'),
    labels: z
      .record(z.string().min(1).max(63), z.string().max(256))
      .optional()
      .describe('Only sandboxes carrying all these labels.'),
  }),
  output: z.object({ sandboxes: z.array(sandboxShape) }),
  async run(a, { api }) {
    const opts: { all?: boolean; labels?: Record<string, string> } = {};
    if (a.all !== undefined) opts.all = a.all;
    if (a.labels !== undefined) opts.labels = a.labels;
    return { structured: { sandboxes: (await api.listSandboxes(opts)).map(sandboxOut) } };
  },
});
