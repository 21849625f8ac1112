/**
 * Pausing a gvisor sandbox (runsc freezes its sentry) and checkpointing one that may be paused (a
 * snapshot's holder). Both are idempotent: runsc refuses to pause a paused container, which it may have
 * left so itself after a checkpoint.
 */
import type { Checkpointed, GvisorFork } from './gvisor-fork.ts';
import type { GvisorSandbox } from './gvisor-link.ts';
import type { Runsc } from './runsc.ts';

export interface GvisorPausing {
  pause(sb: GvisorSandbox): Promise<void>;
  resume(sb: GvisorSandbox): Promise<void>;
  /**
   * A checkpoint of `src`. A paused source runs for the moment its agent needs to let go of its
   * connection and the checkpoint takes, then is paused again: its processes move on by that much.
   */
  checkpoint(src: GvisorSandbox, id: string): Promise<Checkpointed>;
}

export function createGvisorPausing(deps: {
  runsc: Pick<Runsc, 'state' | 'pause' | 'resume'>;
  fork: Pick<GvisorFork, 'checkpoint'>;
}): GvisorPausing {
  const { runsc } = deps;
  async function pause(sb: GvisorSandbox): Promise<void> {
    sb.paused = true;
    if ((await runsc.state(sb.id))?.status === 'paused') return;
    try {
      await runsc.pause(sb.id);
    } catch (e) {
      sb.paused = (await runsc.state(sb.id))?.status === 'paused';
      if (!sb.paused) throw e;
    }
  }
  async function resume(sb: GvisorSandbox): Promise<void> {
    if ((await runsc.state(sb.id))?.status !== 'paused') {
      sb.paused = false;
      return;
    }
    await runsc.resume(sb.id);
    sb.paused = false;
  }
  return {
    pause,
    resume,
    async checkpoint(src, id) {
      if (!src.paused) return deps.fork.checkpoint(src, id);
      await resume(src);
      try {
        return await deps.fork.checkpoint(src, id);
      } finally {
        await pause(src);
      }
    },
  };
}
