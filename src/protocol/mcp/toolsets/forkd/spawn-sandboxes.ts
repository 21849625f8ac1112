import { z } from 'zod';
import { COMPAT_LIMITS, LIMITS } from '../../../../domain/limits.ts';
import { boundedNumber } from '../../../bounds.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { forkdErrorText } from './errors.ts';
import { forkdSandbox, tagArg } from './shapes.ts';
import { spawnFromTag } from './spawn.ts';

export const spawnSandboxes = compatTool(
  {
    name: 'spawn_sandboxes',
    title: 'Spawn sandboxes',
    description:
      "Fork n sandboxes from a tag (list_snapshots): a snapshot's children inherit its files and live Python state; a template's start fresh. per_child_netns/prewarm/live_fork are accepted and ignored (every sandbox has its own network namespace; forks are always live).",
    annotations: HINTS.create,
    input: z.object({
      snapshot_tag: tagArg.describe('Tag to spawn from (list_snapshots)'),
      n: boundedNumber(COMPAT_LIMITS.forkdSpawn).default(1).describe('Number of sandboxes'),
      per_child_netns: z.boolean().default(false).describe('Ignored: each sandbox has its own'),
      memory_limit_mib: boundedNumber(LIMITS.memoryMb).default(256).describe('Memory limit per sandbox'),
      prewarm: z.boolean().default(false).describe('Ignored (no page cache to warm)'),
      live_fork: z.boolean().default(false).describe('Ignored (forks are always live)'),
    }),
    async run(a, { api, progress, signal }) {
      const made = await spawnFromTag(api, {
        tag: a.snapshot_tag,
        n: a.n,
        memoryMb: a.memory_limit_mib,
        progress,
        signal,
      });
      return made.map(forkdSandbox);
    },
  },
  forkdErrorText,
);
