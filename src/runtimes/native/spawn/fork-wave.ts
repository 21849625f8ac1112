/**
 * One wave of a spawn: prepare each child on the host (storage, overlay root, inbox, cgroup, control
 * socket), ask the parent's agent to clone them all in one `fork` request, and wait for each to be ready.
 */

import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ForkboxError, toForkboxError } from '../../../domain/errors.ts';
import { EGRESS } from '../../../domain/limits.ts';
import type { Logger } from '../../../domain/logger.ts';
import type { EgressProxies } from '../../../network/egress-proxies.ts';
import type { OpenNats } from '../../../network/open-nat.ts';
import type { ForkChildSpec } from '../../../service/ports.ts';
import type { Cgroups } from '../cgroups/index.ts';
import { devTmpfsBytes } from '../container/dev-tmpfs.ts';
import { deadline } from '../host/deadline.ts';
import type { Mounts } from '../host/mounts.ts';
import type { NativePaths } from '../host/paths.ts';
import type { UidRange } from '../host/uid-range.ts';
import { mountProject, prepareProjectUpper } from '../storage/project-layer.ts';
import type { SandboxDirs, SnapshotDriver } from '../storage/snapshot-driver.ts';
import { handleOf, LEAVES, type LiveSandbox, type ParentRef, type SpawnOutcome } from './live-sandbox.ts';
import { oomRank } from './oom-order.ts';
import type { Releaser } from './release.ts';
import type { SandboxLink } from './sandbox-link.ts';
import { watchUnborn } from './unborn-watch.ts';

export interface Prepared {
  c: ForkChildSpec;
  sb: LiveSandbox;
  nonce: string;
  ready: Promise<void>;
}

export interface ForkWaveDeps {
  paths: NativePaths;
  mounts: Mounts;
  cgroups: Cgroups;
  snapshots: SnapshotDriver;
  log: Logger;
  uidRange: UidRange;
  live: Map<string, LiveSandbox>;
  link: SandboxLink;
  releaser: Releaser;
  createTimeoutMs?: number;
  egress?: EgressProxies | undefined;
  /** User-mode NATs of `open` sandboxes (none: such creates fail). */
  nat?: OpenNats | undefined;
}

function failed(id: string, e: unknown): SpawnOutcome {
  const err = toForkboxError(e);
  return { id, ok: false, error: new ForkboxError(err.code, `forking sandbox ${id} failed: ${err.message}`) };
}

export function createForkWaves(deps: ForkWaveDeps) {
  const { paths, mounts, cgroups, live } = deps;

  /**
   * upper and work come from the storage driver (on btrfs: one fresh subvolume holding both), bounded by
   * the child's disk limit where the driver enforces one (docs/STORAGE.md); a revival opens its kept dir.
   */
  async function sandboxDirs(c: ForkChildSpec): Promise<SandboxDirs> {
    const dir = paths.sandbox(c.id);
    if (c.reuseDir !== true)
      return deps.snapshots.createSandboxDir(dir, { bytes: c.limits.diskBytes, inodes: c.limits.diskInodes });
    const kept = await deps.snapshots.openSandboxDir(dir);
    if (!kept)
      throw new ForkboxError(
        'sandbox_gone',
        `sandbox ${c.id}'s files are gone (${dir}): it cannot be started again.`,
      );
    return kept;
  }

  async function prepare(parent: ParentRef, c: ForkChildSpec, sourceId: string | null): Promise<Prepared> {
    const { upper, work } = await sandboxDirs(c);
    // The sandbox's `/` is owned by its upper dir's owner: container root.
    chownSync(upper, deps.uidRange.hostStart, deps.uidRange.hostStart);
    const pInbox = paths.inbox(parent.id);
    const rootMnt = join(pInbox, c.id);
    const inboxMnt = join(pInbox, `${c.id}-inbox`);
    for (const d of [rootMnt, inboxMnt]) {
      mkdirSync(d, { mode: 0o755 });
      chmodSync(d, 0o755); // whatever the umask: the child (an unprivileged host uid) walks through them
    }
    // Both appear inside the parent at /.forkbox/inbox/<id>[-inbox] by mount propagation.
    // A project directory (storage/project-layer.ts): its own overlay at its mount path, whose upper is
    // that path in this upper, made before the root overlay is mounted over it.
    prepareProjectUpper(upper, parent.lowers);
    mounts.overlay(rootMnt, parent.lowers, upper, work);
    mountProject(mounts, rootMnt, { upper, lowers: parent.lowers }, dirname(upper), parent.hostPid);
    mounts.sharedSelfBind(paths.inbox(c.id));
    mounts.bind(paths.inbox(c.id), inboxMnt);
    const cg = paths.sandboxCgroup(c.id);
    // Leaves carry no limits of their own (the sandbox group holds them).
    await cgroups.createGroup(cg, c.limits, LEAVES);
    const sb: LiveSandbox = {
      id: c.id,
      hostPid: 0,
      startTime: 0,
      cgroup: cg,
      conn: null,
      connected: Promise.resolve(),
      paused: false,
      tombstone: false,
      depth: parent.depth + 1,
      lowers: parent.lowers,
      templateId: parent.templateId,
      parentId: sourceId,
      spawnedIn: parent.id,
      memoryBytes: c.limits.memoryBytes,
      oomSeen: 0,
      ended: false,
    };
    live.set(c.id, sb);
    const nonce = randomBytes(16).toString('hex');
    const { ready } = await deps.link.serve(sb, { nonce, parentPid: parent.hostPid });
    // The policy lives here, in the daemon: the child's agent only relays its loopback port to it.
    if (c.network?.mode === 'allow') {
      if (!deps.egress)
        throw new ForkboxError(
          'requirement_missing',
          'this daemon has no egress proxy: create the sandbox with network none.',
        );
      await deps.egress.open(c.id, paths.inbox(c.id), c.network);
    }
    return { c, sb, nonce, ready };
  }

  async function startNat(id: string, hostPid: number): Promise<void> {
    if (!deps.nat)
      throw new ForkboxError(
        'requirement_missing',
        'this daemon has no user-mode NAT: create the sandbox with an allow list, or start the daemon with --network-max open.',
      );
    await deps.nat.start(id, hostPid);
  }

  /** The fork request for one wave; resolves with the agent's per-child results (or rejects). */
  async function askParent(parent: ParentRef, wave: Prepared[], sourceId: string | null) {
    const { result } = await parent.conn.request('fork', {
      children: wave.map(({ c, sb, nonce }) => ({
        sandbox_id: c.id,
        nonce,
        hostname: c.name.slice(0, 63),
        root: `/.forkbox/inbox/${c.id}`,
        inbox: `/.forkbox/inbox/${c.id}-inbox`,
        env: c.env,
        fork_index: c.forkIndex,
        parent_id: sourceId,
        tmpfs_bytes: devTmpfsBytes(c.limits.memoryBytes),
        // The child's REPL worker and commands take this rank, whether or not its PID 1 is exempt.
        oom_score_adj: oomRank(sb.depth),
        ...(c.network?.mode === 'allow' ? { net_relay_port: EGRESS.relayPort } : {}),
      })),
    });
    return (Array.isArray(result.children) ? result.children : []) as {
      sandbox_id?: unknown;
      ok?: unknown;
      error?: unknown;
      pid?: unknown;
    }[];
  }

  /**
   * Ask the parent's agent to fork one wave of prepared children; record each one's outcome in `out`.
   * Never rejects: every failure becomes that child's outcome.
   */
  async function forkWave(
    parent: ParentRef,
    wave: Prepared[],
    sourceId: string | null,
    out: Map<string, SpawnOutcome>,
  ): Promise<void> {
    if (wave.length === 0) return;
    let results: Awaited<ReturnType<typeof askParent>> = [];
    try {
      results = await askParent(parent, wave, sourceId);
    } catch (e) {
      for (const { c } of wave) out.set(c.id, { id: c.id, ok: false, error: toForkboxError(e) });
    }
    const unborn = watchUnborn(parent.hostPid);
    await Promise.all(
      wave.map(async ({ c, sb, ready }) => {
        if (out.has(c.id)) return;
        const r = results.find((x) => x.sandbox_id === c.id);
        if (r?.ok !== true) {
          const why = typeof r?.error === 'string' ? r.error : 'no result from the parent agent';
          out.set(c.id, failed(c.id, new ForkboxError('internal', why)));
          return;
        }
        const died =
          typeof r.pid === 'number'
            ? unborn.gone(r.pid).then((why) => {
                // Not a forkbox bug: what the child runs before its greeting is its parent's (at-fork
                // hooks of the source's Python) and its image's.
                throw new ForkboxError(
                  'sandbox_gone',
                  `the new sandbox died during its set-up: ${why}. Nothing of it is kept. If its source's Python runs code at fork (os.register_at_fork) or its image is broken, fix that, then retry.`,
                );
              })
            : new Promise<never>(() => undefined);
        died.catch(() => undefined);
        try {
          await deadline<void>(
            deps.createTimeoutMs ?? 10000,
            `sandbox ${c.id} starting`,
            (resolve, reject) => {
              ready.then(resolve, reject);
              died.catch(reject);
            },
          );
          // `open`: its own NAT, attached to the network namespace its PID 1 has made by now.
          if (c.network?.mode === 'open' && c.held !== true) await startNat(c.id, sb.hostPid);
          out.set(c.id, { id: c.id, ok: true, handle: handleOf(sb) });
        } catch (e) {
          out.set(c.id, failed(c.id, e));
        }
      }),
    );
    unborn.stop();
    // Every child of the wave has pivoted into its root (or failed): the parent needs its mount points
    // no more, and each one it keeps would be copied by every later child. Not before: a child's copy
    // of the parent's inbox is a slave of the host's, so the host's unmount would reach it mid-set-up.
    for (const { c } of wave) {
      try {
        deps.releaser.dropMountPoints(parent.id, c.id);
      } catch (e) {
        deps.log.warn({ sandbox: c.id, err: String(e) }, 'could not drop a new sandbox’s mount points');
      }
    }
  }

  return { prepare, forkWave };
}
