import { z } from 'zod';
import { defineTool, HINTS, sandboxArg } from '../../kit/tool-kit.ts';

const event = z.object({
  seq: z.number(),
  at: z.number(),
  type: z.string(),
  level: z.string().optional(),
  text: z.string().optional(),
  url: z.string().optional(),
  status: z.number().optional(),
});

export const browserEvents = defineTool({
  name: 'browser_events',
  title: 'Browser events',
  description:
    "The page's console messages, errors, requests, responses and navigations after cursor `since`; pass `next` back as `since` next time.",
  annotations: HINTS.read,
  input: z.object({
    sandbox: sandboxArg,
    since: z.number().int().min(0).optional().describe('Default 0: from the oldest kept'),
    limit: z.number().int().min(1).max(1000).optional().describe('Default 100'),
  }),
  output: z.object({
    url: z.string(),
    events: z.array(event),
    next: z.number(),
    dropped: z.number(),
  }),
  async run(a, { api, sandbox }) {
    const r = await api.browser(await sandbox(a.sandbox), {
      action: 'events',
      ...(a.since === undefined ? {} : { since: a.since }),
      ...(a.limit === undefined ? {} : { limit: a.limit }),
    });
    return { structured: { url: r.url, events: r.events ?? [], next: r.next ?? 0, dropped: r.dropped ?? 0 } };
  },
});
