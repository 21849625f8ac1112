import { z } from 'zod';
import { defineTool, HINTS } from '../tool-kit.ts';
import { templateNameArg } from './template-define.ts';

export const templateDelete = defineTool({
  name: 'template_delete',
  title: 'Delete a template',
  description:
    "Delete a named template. Refused while live sandboxes were created from it (they are named: kill them first); 'default' cannot be deleted. Host-wide configuration: only the host's own tenant may delete templates.",
  annotations: HINTS.destroy,
  input: z.object({ name: templateNameArg }),
  output: z.object({ deleted: z.string() }),
  async run(a, { api }) {
    return { structured: await api.deleteTemplate(a.name) };
  },
});
