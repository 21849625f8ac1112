import { z } from 'zod';
import { labelsArg } from '../kit/kv-list.ts';
import { sandboxOut, sandboxSummaryShape } from '../kit/shapes.ts';
import { defineTool, HINTS } from '../kit/tool-kit.ts';

export const sandboxList = defineTool({
  name: 'sandbox_list',
  title: 'List sandboxes',
  description:
    'List your sandboxes (state, image, limits, labels, expiry); your default one has label forkbox.mcp-default.',
  annotations: HINTS.read,
  input: z.object({
    all: z.boolean().optional().describe('Include ended ones'),
    labels: labelsArg.optional().describe('Only with all these NAME=value'),
  }),
  output: z.object({ sandboxes: z.array(sandboxSummaryShape) }),
  async run(a, { api }) {
    const opts: { all?: boolean; labels?: Record<string, string> } = {};
    if (a.all !== undefined) opts.all = a.all;
    if (a.labels !== undefined) opts.labels = a.labels;
    const summary = (s: Parameters<typeof sandboxOut>[0]) => {
      const o = sandboxOut(s);
      return {
        id: o.id,
        name: o.name,
        state: o.state,
        image: o.image,
        parent_id: o.parent_id,
        labels: o.labels,
        expires_at: o.expires_at,
        persistent: o.persistent,
      };
    };
    return { structured: { sandboxes: (await api.listSandboxes(opts)).map(summary) } };
  },
});
