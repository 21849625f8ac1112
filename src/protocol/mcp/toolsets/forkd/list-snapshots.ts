import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { forkdErrorText } from './errors.ts';
import { forkdSnapshot, forkdTemplate } from './shapes.ts';

/** Snapshots first (a tag that is both a snapshot and a template spawns from the snapshot), then templates. */
export const listSnapshots = compatTool(
  {
    name: 'list_snapshots',
    title: 'List snapshots',
    description:
      'List the tags sandboxes can be spawned from: snapshots (create_snapshot, branch_sandbox) and templates (`default` always).',
    annotations: HINTS.read,
    input: z.object({}),
    async run(_a, { api }) {
      const [snaps, templates] = await Promise.all([api.listSnapshots(), api.listTemplates()]);
      const names = new Set(snaps.map((s) => s.name));
      return [...snaps.map(forkdSnapshot), ...templates.filter((t) => !names.has(t.name)).map(forkdTemplate)];
    },
  },
  forkdErrorText,
);
