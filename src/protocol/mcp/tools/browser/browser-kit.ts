/**
 * What the browser tools share: the ref argument, the result shape (the page, its snapshot as its own
 * text block, a screenshot as an image block), and the one call they all make (ForkboxApi.browser).
 */
import { z } from 'zod';
import type { BrowserAction, BrowserResult } from '../../../../domain/browser.ts';
import {
  defineTool,
  type ExtraContent,
  sandboxArg,
  type ToolDef,
  type ToolHints,
} from '../../kit/tool-kit.ts';

export const refArg = z
  .string()
  .regex(/^(f\d{1,4})?e\d{1,7}$/)
  .describe('Element ref from the latest browser_snapshot, e.g. e12');

export const pageShape = z.object({
  url: z.string(),
  title: z.string(),
  snapshot: z.string().optional(),
  snapshot_truncated_bytes: z.number().optional(),
  started: z.boolean().optional(),
});

export function pageOut(r: BrowserResult): z.input<typeof pageShape> {
  return {
    url: r.url,
    title: r.title,
    ...(r.snapshot === undefined ? {} : { snapshot: r.snapshot }),
    ...(r.snapshotTruncatedBytes === undefined ? {} : { snapshot_truncated_bytes: r.snapshotTruncatedBytes }),
    ...(r.started === undefined ? {} : { started: r.started }),
  };
}

export function screenshotContent(r: BrowserResult): ExtraContent[] {
  return r.screenshot ? [{ type: 'image', data: r.screenshot.base64, mimeType: r.screenshot.mime }] : [];
}

/** A tool that turns its arguments into one browser action and answers the page with its snapshot. */
export function pageTool<I extends z.ZodRawShape>(def: {
  name: string;
  title: string;
  description: string;
  annotations: ToolHints;
  args: I;
  action(a: z.output<z.ZodObject<I>>): BrowserAction;
}): ToolDef {
  return defineTool({
    name: def.name,
    title: def.title,
    description: def.description,
    annotations: def.annotations,
    bulk: ['snapshot'],
    input: z.object({ sandbox: sandboxArg, ...def.args }),
    output: pageShape,
    async run(a, { api, sandbox }) {
      const args = a as { sandbox?: string };
      const r = await api.browser(await sandbox(args.sandbox), def.action(a as never));
      return { structured: pageOut(r) };
    },
  });
}
