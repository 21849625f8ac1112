/**
 * Making sandboxes: the host side of a fork (docs/ARCHITECTURE.md, "Sandboxes" and "Fork"). The same steps
 * serve a create (the parent is a template's agent, the children's lower layers are the image's) and a
 * fork of a running sandbox (the parent is its agent, the lowers are a frozen copy of its upper over its
 * own lowers). The parts: live-sandbox.ts (what is held per sandbox), sandbox-link.ts (its control
 * socket), fork-wave.ts (one wave of children), release.ts (giving it all back), exit-watch.ts (sandboxes
 * that end on their own).
 */

import { ForkboxError, toForkboxError } from '../../../domain/errors.ts';
import type { Logger } from '../../../domain/logger.ts';
import type { SandboxRecord } from '../../../domain/types.ts';
import type { EgressProxies } from '../../../network/egress-proxies.ts';
import type { OpenNats } from '../../../network/open-nat.ts';
import type { ForkChildSpec } from '../../../service/ports.ts';
import type { AgentTimeouts } from '../agent-link/agent-timeouts.ts';
import type { InboxHub } from '../agent-link/inbox-hub.ts';
import type { Cgroups } from '../cgroups/index.ts';
import type { Mounts } from '../host/mounts.ts';
import type { NativePaths } from '../host/paths.ts';
import type { UidRange } from '../host/uid-range.ts';
import type { SnapshotDriver } from '../layers/snapshot-driver.ts';
import type { ExitWatch } from './exit-watch.ts';
import { createForkWaves, type Prepared } from './fork-wave.ts';
import {
  FORK_WAVE,
  type LiveSandbox,
  liveFromRecord,
  type ParentRef,
  type SpawnOutcome,
} from './live-sandbox.ts';
import type { OomOrder } from './oom-order.ts';
import { createReleaser } from './release.ts';
import { createSandboxLink, type Expectation } from './sandbox-link.ts';

export type { LiveSandbox, ParentRef, SpawnOutcome } from './live-sandbox.ts';
export { FORK_WAVE, LEAVES } from './live-sandbox.ts';

export interface ChildSpawnerDeps {
  paths: NativePaths;
  mounts: Mounts;
  cgroups: Cgroups;
  hub: InboxHub;
  snapshots: SnapshotDriver;
  log: Logger;
  uidRange: UidRange;
  live: Map<string, LiveSandbox>;
  timeouts: AgentTimeouts;
  exits: ExitWatch;
  oom: OomOrder;
  createTimeoutMs?: number;
  pinnedLayers?: () => string[];
  egress?: EgressProxies | undefined;
  nat?: OpenNats | undefined;
  closePorts?: ((id: string) => void) | undefined;
  /** Give back one reference to a block of host uids (container/template-blocks.ts). */
  releaseBlock(ref: { template: string; index: number }): void;
}

export interface ChildSpawner {
  /** Listens on a sandbox's control socket and adopts its agent's connections (sandbox-link.ts). */
  serve(sb: LiveSandbox, expect: Expectation | null): Promise<{ ready: Promise<void> }>;
  /** Releases everything sandbox `id` holds on the host, dropping its mount points in each owner's inbox. */
  release(id: string, ...owners: (string | null)[]): Promise<void>;
  /** The same, for a sandbox known by its entry (a record with no live entry, after a restart). */
  releaseKnown(sb: LiveSandbox, ...owners: (string | null)[]): Promise<void>;
  /** What a sandbox whose processes are gone still holds on the host, but not its files (a revival). */
  releaseAllButFiles(sb: LiveSandbox): Promise<void>;
  /** Kills a sandbox's own processes but keeps its PID 1 (frozen) for its descendants. */
  tombstone(id: string): Promise<void>;
  /** Removes the layers no live sandbox stacks on and no snapshot pins. */
  collectLayers(): Promise<void>;
  /** A live entry for a sandbox known from the store (recovery, or a kill after a restart). */
  fromRecord(rec: SandboxRecord): LiveSandbox;
  /** Forks `parent`'s REPL worker into one sandbox per child spec, each succeeding or failing on its own. */
  spawn(parent: ParentRef, children: ForkChildSpec[], sourceId: string | null): Promise<SpawnOutcome[]>;
}

export function createChildSpawner(deps: ChildSpawnerDeps): ChildSpawner {
  const { paths, log } = deps;
  const releaser = createReleaser(deps);
  const link = createSandboxLink(deps);
  const waves = createForkWaves({ ...deps, link, releaser });

  return {
    serve: link.serve,
    release: (id: string, ...owners: (string | null)[]) => releaser.release(id, owners),
    releaseKnown: (sb: LiveSandbox, ...owners: (string | null)[]) => releaser.release(sb.id, owners, sb),
    releaseAllButFiles: (sb: LiveSandbox) => releaser.release(sb.id, [], sb, { keepFiles: true }),
    tombstone: releaser.tombstone,
    collectLayers: releaser.collectLayers,
    fromRecord: (rec: SandboxRecord): LiveSandbox => liveFromRecord(rec, paths),

    /**
     * Fork `parent`'s REPL worker into one sandbox per child spec. Each child succeeds or fails on its
     * own; nothing of a failed child is left behind.
     */
    async spawn(
      parent: ParentRef,
      children: ForkChildSpec[],
      sourceId: string | null,
    ): Promise<SpawnOutcome[]> {
      const out = new Map<string, SpawnOutcome>();
      // In waves: the host prepares the next wave while the parent's agent forks this one, and at most
      // two waves' mount points are in the parent's mount namespace at a time. Each child copies that
      // whole mount table when it makes its own, so all N children at once made a fork O(N²).
      let inFlight: Promise<void> | null = null;
      for (let i = 0; i < children.length; i += FORK_WAVE) {
        const wave = children.slice(i, i + FORK_WAVE);
        // Prepared concurrently: much of a prepare is awaiting the control socket's listen.
        const prepared = await Promise.all(
          wave.map(async (c): Promise<Prepared | null> => {
            try {
              return await waves.prepare(parent, c, sourceId);
            } catch (e) {
              out.set(c.id, { id: c.id, ok: false, error: toForkboxError(e) });
              return null;
            }
          }),
        );
        const previous = inFlight;
        inFlight = waves.forkWave(
          parent,
          prepared.filter((r) => r !== null),
          sourceId,
          out,
        );
        await previous;
      }
      await inFlight;
      for (const c of children) {
        const o = out.get(c.id);
        // A revival's files are what it was for: they stay when it fails (recovery decides).
        if (!o?.ok)
          await releaser
            .release(c.id, [parent.id], undefined, { keepFiles: c.reuseDir === true })
            .catch((e: unknown) => log.warn({ sandbox: c.id, err: String(e) }, 'cleanup after failed fork'));
      }
      return children.map(
        (c) => out.get(c.id) ?? { id: c.id, ok: false, error: new ForkboxError('internal', 'no outcome') },
      );
    },
  };
}
