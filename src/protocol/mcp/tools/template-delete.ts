import { z } from 'zod';
import { defineTool, HINTS } from '../kit/tool-kit.ts';
import { templateNameArg } from './template-define.ts';

export const templateDelete = defineTool({
  name: 'template_delete',
  title: 'Delete template',
  description: 'Delete a template (not while sandboxes made from it live). Host-wide; host tenant only.',
  annotations: HINTS.destroy,
  hostOnly: true,
  input: z.object({ name: templateNameArg }),
  output: z.object({ deleted: z.string() }),
  async run(a, { api }) {
    return { structured: await api.deleteTemplate(a.name) };
  },
});
