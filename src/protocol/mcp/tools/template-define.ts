import { z } from 'zod';
import type { DefineTemplateRequest, TemplateInfo } from '../../../service/api.ts';
import { defineTool, HINTS } from '../tool-kit.ts';

/** A template config as the template tools return it. */
export const templateShape = z.object({
  name: z.string(),
  image: z.string(),
  prewarm: z.array(z.string()).describe('Python modules already imported in every sandbox made from it.'),
  builtin: z.boolean().describe("True for 'default', which always exists."),
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
  .describe('Template name (see template_list).');

export const templateDefine = defineTool({
  name: 'template_define',
  title: 'Define a template',
  description:
    "Define (or replace) a named template: an image plus Python modules to pre-import. Every sandbox created with sandbox_create's `template` starts with those modules already imported in its Python REPL, so the first code_run that uses them is fast. A module that fails to import is skipped (logged by the daemon). Host-wide configuration: only the host's own tenant may define templates.",
  annotations: HINTS.write,
  input: z.object({
    name: templateNameArg,
    image: z.string().min(1).max(128).optional().describe("Image name (default 'debian'; see image_list)."),
    prewarm: z
      .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/))
      .max(64)
      .optional()
      .describe(
        "Dotted module names to import once in the template, e.g. ['json', 'sqlite3', 'email.mime.text'].",
      ),
  }),
  output: templateShape,
  async run(a, { api }) {
    const req: DefineTemplateRequest = { name: a.name };
    if (a.image !== undefined) req.image = a.image;
    if (a.prewarm !== undefined) req.prewarm = a.prewarm;
    return { structured: templateOut(await api.defineTemplate(req)) };
  },
});
