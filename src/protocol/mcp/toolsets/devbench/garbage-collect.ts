import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { auditEvent } from './audit.ts';
import { devbenchErrorText } from './errors.ts';

/**
 * forkbox's gc (left-over mounts, cgroups and directories of ended sandboxes; host-wide, so refused to a
 * tenant token). Exec records and attachments need no collection here: `execs_cleaned` and
 * `attachments_cleaned` are 0.
 */
export const garbageCollect = compatTool(
  {
    name: 'garbage_collect',
    title: 'Garbage collect',
    description: "Trigger garbage collection of ended containers' leftovers.",
    annotations: HINTS.destroy,
    input: z.object({}),
    async run(_a, { api, log }) {
      auditEvent(log, 'system_gc');
      const r = await api.gc();
      return { containers_removed: r.removedSandboxes.length, execs_cleaned: 0, attachments_cleaned: 0 };
    },
  },
  devbenchErrorText,
);
