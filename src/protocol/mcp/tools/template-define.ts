import { z } from 'zod';
import type { DefineTemplateRequest, TemplateInfo } from '../../../service/api.ts';
import { defineTool, HINTS } from '../kit/tool-kit.ts';

/** A template config as the template tools return it. */
export const templateShape = z.object({
  name: z.string(),
  image: z.string(),
  prewarm: z.array(z.string()),
  builtin: z.boolean(),
  updated_at: z.string().nullable(),
});

export const templateOut = (t: TemplateInfo): z.input<typeof templateShape> => ({
  name: t.name,
  image: t.image,
  prewarm: t.prewarm,
  builtin: t.builtin,
  updated_at: t.updatedAt,
});

export const templateNameArg = z
  .string()
  .regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/)
  .describe('Template name');

export const templateDefine = defineTool({
  name: 'template_define',
  title: 'Define template',
  description:
    'Define or replace a template: an image plus Python modules pre-imported in sandboxes made from it. Host-wide; host tenant only.',
  annotations: HINTS.write,
  hostOnly: true,
  input: z.object({
    name: templateNameArg,
    image: z.string().min(1).max(128).optional().describe('Image (default debian)'),
    prewarm: z
      .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/))
      .max(64)
      .optional()
      .describe('Modules to pre-import, e.g. numpy'),
  }),
  output: templateShape,
  async run(a, { api }) {
    const req: DefineTemplateRequest = { name: a.name };
    if (a.image !== undefined) req.image = a.image;
    if (a.prewarm !== undefined) req.prewarm = a.prewarm;
    return { structured: templateOut(await api.defineTemplate(req)) };
  },
});
