/**
 * cgroup v1's freezer and what builds on it: freeze/thaw a group (with a deadline: the v1 freezer can
 * stay FREEZING), list its processes in every hierarchy, and kill them all without a fork slipping by.
 */
import path from 'node:path';
import { ForkboxError } from '../../../domain/errors.ts';
import {
  checkRel,
  fileExists,
  freezeAndKill,
  killUntilEmpty,
  pollUntil,
  procsRecursive,
  readCgroupFile,
  writeCgroupFile,
} from './fsio.ts';
import { DEFAULT_FREEZE_TIMEOUT_MS, DEFAULT_KILL_TIMEOUT_MS } from './types.ts';
import type { V1Layout } from './v1-layout.ts';

export interface V1Freezer {
  freeze(rel: string, timeoutMs?: number): Promise<void>;
  thaw(rel: string): Promise<void>;
  isFrozen(rel: string): Promise<boolean>;
  procs(rel: string): Promise<number[]>;
  killAll(rel: string, timeoutMs?: number): Promise<void>;
}

export function createV1Freezer({ file, g, hierarchies }: V1Layout): V1Freezer {
  async function freezerState(rel: string): Promise<string> {
    return (await readCgroupFile(file('freezer', rel, 'freezer.state'))).trim();
  }

  async function freeze(rel: string, timeoutMs = DEFAULT_FREEZE_TIMEOUT_MS): Promise<void> {
    await writeCgroupFile(file('freezer', rel, 'freezer.state'), 'FROZEN');
    if (await pollUntil(async () => (await freezerState(rel)) === 'FROZEN', timeoutMs)) return;
    // The v1 freezer can stay in FREEZING forever (a task stuck in an uninterruptible sleep, e.g. on NFS or
    // FUSE). Leaving it half-frozen would wedge the sandbox, so undo it before reporting.
    const state = await freezerState(rel).catch(() => 'unknown');
    await writeCgroupFile(file('freezer', rel, 'freezer.state'), 'THAWED').catch(() => {});
    throw new ForkboxError(
      'timeout',
      `cgroup v1: freezing '${rel}' did not finish within ${timeoutMs} ms (state ${state}; a process is probably stuck in uninterruptible I/O); the group was thawed again. Retry, or kill the sandbox.`,
      { cgroup: rel, state, timeoutMs },
    );
  }

  async function thaw(rel: string): Promise<void> {
    await writeCgroupFile(file('freezer', rel, 'freezer.state'), 'THAWED');
    await pollUntil(async () => (await freezerState(rel)) === 'THAWED', 1_000);
  }

  async function procs(rel: string): Promise<number[]> {
    const set = new Set<number>();
    for (const h of hierarchies) await procsRecursive(path.join(h, ...checkRel(rel)), set);
    return [...set].sort((a, b) => a - b);
  }

  return {
    freeze,
    thaw,
    procs,

    async isFrozen(rel) {
      return (await freezerState(rel)) === 'FROZEN';
    },

    async killAll(rel, timeoutMs = DEFAULT_KILL_TIMEOUT_MS) {
      if (!fileExists(g('freezer', rel))) return;
      const deadline = Date.now() + timeoutMs;
      await freezeAndKill({ freeze, thaw, procs }, rel, timeoutMs);
      await killUntilEmpty('v1', procs, rel, { deadline, timeoutMs, everyMs: 2 });
    },
  };
}
