import { z } from 'zod';
import { defineTool, HINTS } from '../kit/tool-kit.ts';
import { templateOut, templateShape } from './template-define.ts';

export const templateList = defineTool({
  name: 'template_list',
  title: 'List templates',
  description: "Templates for sandbox_create's template: an image plus Python modules already imported.",
  annotations: HINTS.read,
  input: z.object({}),
  output: z.object({ templates: z.array(templateShape) }),
  async run(_a, { api }) {
    return { structured: { templates: (await api.listTemplates()).map(templateOut) } };
  },
});
