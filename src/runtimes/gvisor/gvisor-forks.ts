/**
 * The gvisor runtime's fork: one checkpoint of the source (even a paused one, gvisor-pause.ts), every
 * child restored from it (gvisor-fork.ts), a held child paused, and the image removed whatever happened.
 * One fork of a source at a time, in the queue its REPL calls use (a checkpoint must not cut a cell).
 */
import { rmSync } from 'node:fs';
import type { Logger } from '../../domain/logger.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { ForkChildSpec, ForkOutcome, SandboxHandle } from '../../service/ports.ts';
import type { KeyedQueue } from '../../util/keyed-queue.ts';
import type { GvisorFork } from './gvisor-fork.ts';
import type { GvisorSandbox } from './gvisor-link.ts';
import type { GvisorPausing } from './gvisor-pause.ts';

export interface GvisorForksDeps {
  fork: Pick<GvisorFork, 'restoreAll'>;
  pausing: GvisorPausing;
  /** Sandboxes by runtime id: the children are added. */
  live: Map<string, GvisorSandbox>;
  queue: Pick<KeyedQueue, 'run'>;
  sandboxOf(rec: SandboxRecord): GvisorSandbox;
  handleOf(sb: GvisorSandbox, python: string): SandboxHandle;
  pythonOf(rec: SandboxRecord): string;
  log: Logger;
}

export function createGvisorForks(deps: GvisorForksDeps) {
  return async function forkSandbox(source: SandboxRecord, children: ForkChildSpec[]): Promise<ForkOutcome> {
    const src = deps.sandboxOf(source);
    return deps.queue.run(src.id, async () => {
      const t0 = performance.now();
      const ck = await deps.pausing.checkpoint(src, source.id);
      try {
        const python = deps.pythonOf(source);
        const base = { layers: src.layers, python };
        const { sandboxes, outcomes } = await deps.fork.restoreAll(ck.image, children, source.id, base);
        for (const sb of sandboxes) deps.live.set(sb.id, sb);
        for (const [i, child] of children.entries()) {
          const sb = sandboxes.find((x) => x.id === child.id);
          if (!outcomes[i]?.ok || !sb) continue;
          outcomes[i] = { id: child.id, ok: true, handle: deps.handleOf(sb, python) };
          if (child.held) await deps.pausing.pause(sb);
        }
        deps.log.info(
          { sandbox: source.id, children: children.length, ms: Math.round(performance.now() - t0) },
          'gvisor fork',
        );
        return {
          pauseMs: ck.pauseMs,
          snapshotMs: ck.pauseMs,
          driver: 'gvisor-checkpoint',
          pythonState: true,
          children: outcomes,
        };
      } finally {
        rmSync(ck.image, { recursive: true, force: true });
      }
    });
  };
}
