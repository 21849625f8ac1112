import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { auditEvent } from './audit.ts';
import { devbenchErrorText } from './errors.ts';

/**
 * forkbox reconciles its store with the host when the daemon starts (service/recovery.ts) and keeps them
 * in step after; there is no Docker to drift from. The tool reports the live containers it sees as
 * discovered and nothing adopted or cleaned.
 */
export const reconcile = compatTool(
  {
    name: 'reconcile',
    title: 'Reconcile',
    description: 'Container reconciliation (forkbox reconciles at daemon start; this reports what it sees).',
    annotations: HINTS.read,
    input: z.object({}),
    async run(_a, { api, log }) {
      auditEvent(log, 'system_reconcile');
      const live = await api.listSandboxes();
      return { discovered: live.length, adopted: 0, cleaned_up: 0, orphaned: 0, errors: 0 };
    },
  },
  devbenchErrorText,
);
