import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ForkboxError } from '../../../../domain/errors.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { forkdErrorText } from './errors.ts';
import { forkdSnapshot, sandboxIdArg, tagArg } from './shapes.ts';

/**
 * A branch is a forkbox snapshot of the running sandbox: its files frozen into a layer and its live
 * Python state held by a paused copy, spawnable any number of times. Every forkbox snapshot is what forkd
 * calls a diff (only the sandbox's own writes are frozen) and is complete when the call returns, so
 * `mode`, `diff`, `measure_diff` and `wait` choose nothing here; they are still checked as forkd did.
 */
export const branchSandbox = compatTool(
  {
    name: 'branch_sandbox',
    title: 'Branch sandbox',
    description:
      "Snapshot a running sandbox (files and live Python state) under a new tag; spawn_sandboxes from it gives children that start where it is. The source pauses for pause_ms. mode/diff/measure_diff/wait are accepted; forkbox's snapshot is always a diff and ready on return.",
    annotations: HINTS.create,
    input: z.object({
      sandbox_id: sandboxIdArg,
      tag: tagArg.optional().describe('New tag (default branch-<id>-<unix-ts>-<hex>)'),
      diff: z.boolean().default(false).describe('Legacy: forkbox snapshots are always diffs'),
      measure_diff: z.boolean().default(false).describe('Accepted; no diff sizes are measured'),
      mode: z.enum(['full', 'diff', 'live']).optional().describe('full, diff or live: all the same here'),
      wait: z.boolean().default(true).describe('Accepted; the snapshot is ready on return'),
    }),
    async run(a, { api }) {
      if (a.mode !== undefined && a.diff) {
        throw new ForkboxError(
          'invalid_argument',
          'mode and diff are both set: give one of them (mode replaces diff).',
        );
      }
      const source = await api.getSandbox(a.sandbox_id);
      const tag =
        a.tag ?? `branch-${source.id}-${Math.floor(Date.now() / 1000)}-${randomBytes(3).toString('hex')}`;
      const snap = await api.createSnapshot(source.id, { name: tag });
      return {
        ...forkdSnapshot(snap),
        branched_from: source.id,
        pause_ms: snap.pauseMs ?? null,
        status: 'ready',
      };
    },
  },
  forkdErrorText,
);
