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
import type { UidBlock } from '../container/template-blocks.ts';
import { deadline } from '../host/deadline.ts';
import type { Mounts } from '../host/mounts.ts';
import type { NativePaths } from '../host/paths.ts';
import type { UidRange } from '../host/uid-range.ts';
import { BLOCK_SIZE } from '../host/uid-ranges.ts';
import { mountProject, prepareProjectUpper, projectChain } from '../layers/project-layer.ts';
import type { SandboxDirs, SnapshotDriver } from '../layers/snapshot-driver.ts';
import {
  type ChildUids,
  handleOf,
  LEAVES,
  type LiveSandbox,
  type ParentRef,
  type SpawnOutcome,
  takeBlock,
} from './live-sandbox.ts';
import { oomRank } from './oom-order.ts';
import type { Releaser } from './release.ts';
import type { SandboxLink } from './sandbox-link.ts';
import { watchUnborn } from './unborn-watch.ts';

export interface Prepared {
  c: ForkChildSpec;
  sb: LiveSandbox;
  nonce: string;
  ready: Promise<void>;
  /** Its user namespace's id map as seen from its parent's (null: a legacy parent, none made). */
  idMap: string | null;
}

/**
 * Where a child's mount points are made in its parent's inbox: `<inbox>/<id>/{root,inbox}`, the dir
 * root:<the child's root gid> 0750, so the child walks through it and nothing else of another block does.
 */
export function childMountDirs(
  parentInbox: string,
  id: string,
): { dir: string; root: string; inbox: string } {
  const dir = join(parentInbox, id);
  return { dir, root: join(dir, 'root'), inbox: join(dir, 'inbox') };
}

/** The child's id map relative to its parent's user namespace: a template's block, or a fork's identity. */
function idMapOf(uids: ChildUids, block: UidBlock | null): string | null {
  if (!block || uids.kind === 'legacy') return null;
  const inside = uids.kind === 'inherit' ? 0 : block.index * BLOCK_SIZE;
  return `0 ${inside} ${BLOCK_SIZE}\n`;
}

export interface ForkWaveDeps {
  paths: NativePaths;
  mounts: Mounts;
  cgroups: Cgroups;
  snapshots: SnapshotDriver;
  log: Logger;
  /** The ids layers are stored with (container id N = host id hostStart + N). */
  uidRange: UidRange;
  live: Map<string, LiveSandbox>;
  /** Give back one reference to a block (a child that failed before it was live). */
  releaseBlock(ref: { template: string; index: number }): void;
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

export interface ForkWaves {
  /** Set up child `c` of `parent` on the host (dirs, root, inbox, cgroup, socket); in `live` from then. */
  prepare(parent: ParentRef, c: ForkChildSpec, sourceId: string | null): Promise<Prepared>;
  /**
   * Ask the parent's agent to fork one wave of prepared children; record each one's outcome in `out`.
   * Never rejects: every failure becomes that child's outcome.
   */
  forkWave(
    parent: ParentRef,
    wave: Prepared[],
    sourceId: string | null,
    out: Map<string, SpawnOutcome>,
  ): Promise<void>;
}

/**
 * upper and work come from the storage driver (on btrfs: one fresh subvolume holding both), bounded by
 * the child's disk limit where the driver enforces one (docs/STORAGE.md); a revival opens its kept dir.
 */
async function sandboxDirs(deps: ForkWaveDeps, c: ForkChildSpec): Promise<SandboxDirs> {
  const dir = deps.paths.sandbox(c.id);
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

/** The child's root overlay (and project overlay) at `rootMnt`, through its block's idmaps. */
async function mountRoot(
  deps: ForkWaveDeps,
  parent: ParentRef,
  dirs: SandboxDirs,
  rootMnt: string,
  block: UidBlock | null,
) {
  const { mounts } = deps;
  const sbDir = dirname(dirs.upper);
  const idmap = block?.storageNs;
  mounts.overlay(
    rootMnt,
    parent.lowers.map((path) => ({ path, idmap })),
    { root: sbDir, upper: 'upper', work: 'work', idmap },
  );
  const chain = { upper: dirs.upper, lowers: parent.lowers };
  if (!projectChain(chain)) return;
  const host = block ? { fd: await block.hostNs() } : { pid: parent.hostPid };
  mountProject(mounts, rootMnt, chain, sbDir, { layers: idmap, host });
}

async function prepare(
  deps: ForkWaveDeps,
  parent: ParentRef,
  c: ForkChildSpec,
  sourceId: string | null,
): Promise<Prepared> {
  const taken = takeBlock(parent.uids);
  try {
    return await prepareOn(deps, parent, c, sourceId, taken);
  } catch (e) {
    // Not in `live` yet when it failed early: its block reference is given back here, else by release.
    if (taken && !deps.live.has(c.id)) deps.releaseBlock(taken.ref);
    throw e;
  }
}

/** The child's record in `live`, before it is born (no pid, no connection yet). */
function unbornSandbox(
  parent: ParentRef,
  c: ForkChildSpec,
  sourceId: string | null,
  cgroup: string,
  taken: ReturnType<typeof takeBlock>,
): LiveSandbox {
  return {
    id: c.id,
    hostPid: 0,
    startTime: 0,
    cgroup,
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
    block: taken?.ref ?? null,
  };
}

async function prepareOn(
  deps: ForkWaveDeps,
  parent: ParentRef,
  c: ForkChildSpec,
  sourceId: string | null,
  taken: ReturnType<typeof takeBlock>,
): Promise<Prepared> {
  const { paths, mounts } = deps;
  const dirs = await sandboxDirs(deps, c);
  // The sandbox's `/` is owned by its upper dir's owner: container root (as stored).
  chownSync(dirs.upper, deps.uidRange.hostStart, deps.uidRange.hostStart);
  const m = childMountDirs(paths.inbox(parent.id), c.id);
  mkdirSync(m.dir, { mode: 0o750 });
  chownSync(m.dir, 0, taken?.block.base ?? deps.uidRange.hostStart);
  chmodSync(m.dir, 0o750);
  for (const d of [m.root, m.inbox]) {
    mkdirSync(d, { mode: 0o755 });
    chmodSync(d, 0o755); // whatever the umask: the child (an unprivileged host uid) walks through them
  }
  // Both appear inside the parent at /.forkbox/inbox/<id>/{root,inbox} by mount propagation.
  // A project directory (layers/project-layer.ts): its own overlay at its mount path, whose upper is
  // that path in this upper, made before the root overlay is mounted over it.
  prepareProjectUpper(dirs.upper, parent.lowers);
  await mountRoot(deps, parent, dirs, m.root, taken?.block ?? null);
  mounts.sharedSelfBind(paths.inbox(c.id));
  mounts.bind(paths.inbox(c.id), m.inbox);
  const cg = paths.sandboxCgroup(c.id);
  // Leaves carry no limits of their own (the sandbox group holds them).
  await deps.cgroups.createGroup(cg, c.limits, LEAVES);
  const sb = unbornSandbox(parent, c, sourceId, cg, taken);
  deps.live.set(c.id, sb);
  const nonce = randomBytes(16).toString('hex');
  const { ready } = await deps.link.serve(sb, {
    nonce,
    parentPid: parent.hostPid,
    ...(taken ? { uid: taken.block.base } : {}),
  });
  // The policy lives here, in the daemon: the child's agent only relays its loopback port to it.
  if (c.network?.mode === 'allow') {
    if (!deps.egress)
      throw new ForkboxError(
        'requirement_missing',
        'this daemon has no egress proxy: create the sandbox with network none.',
      );
    await deps.egress.open(c.id, paths.inbox(c.id), c.network);
  }
  return { c, sb, nonce, ready, idMap: idMapOf(parent.uids, taken?.block ?? null) };
}

async function startNat(
  deps: ForkWaveDeps,
  id: string,
  hostPid: number,
  uid: number | undefined,
): Promise<void> {
  if (!deps.nat)
    throw new ForkboxError(
      'requirement_missing',
      'this daemon has no user-mode NAT: create the sandbox with an allow list, or start the daemon with --network-max open.',
    );
  await deps.nat.start(id, hostPid, uid);
}

/** One child's result in the parent agent's answer to `fork`. */
interface ChildForkResult {
  sandbox_id?: unknown;
  ok?: unknown;
  error?: unknown;
  pid?: unknown;
}

/** The fork request for one wave; resolves with the agent's per-child results (or rejects). */
async function askParent(
  parent: ParentRef,
  wave: Prepared[],
  sourceId: string | null,
): Promise<ChildForkResult[]> {
  const { result } = await parent.conn.request('fork', {
    children: wave.map(({ c, sb, nonce, idMap }) => ({
      sandbox_id: c.id,
      nonce,
      hostname: c.name.slice(0, 63),
      root: `/.forkbox/inbox/${c.id}/root`,
      inbox: `/.forkbox/inbox/${c.id}/inbox`,
      env: c.env,
      fork_index: c.forkIndex,
      parent_id: sourceId,
      tmpfs_bytes: devTmpfsBytes(c.limits.memoryBytes),
      // The child's REPL worker and commands take this rank, whether or not its PID 1 is exempt.
      oom_score_adj: oomRank(sb.depth),
      ...(c.network?.mode === 'allow' ? { net_relay_port: EGRESS.relayPort } : {}),
      // Its own user namespace, with this id map (agent/forking.py); none for an old agent's children.
      ...(idMap ? { userns: { uid_map: idMap, gid_map: idMap } } : {}),
    })),
  });
  return (Array.isArray(result.children) ? result.children : []) as ChildForkResult[];
}

/** Wait for one forked child of a wave to greet (or to die first); its outcome goes into `out`. */
async function awaitChild(
  deps: ForkWaveDeps,
  { c, sb, ready }: Prepared,
  r: ChildForkResult | undefined,
  unborn: ReturnType<typeof watchUnborn>,
  out: Map<string, SpawnOutcome>,
): Promise<void> {
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
    await deadline<void>(deps.createTimeoutMs ?? 10000, `sandbox ${c.id} starting`, (resolve, reject) => {
      ready.then(resolve, reject);
      died.catch(reject);
    });
    // `open`: its own NAT, attached to the network namespace its PID 1 has made by now.
    if (c.network?.mode === 'open' && c.held !== true) await startNat(deps, c.id, sb.hostPid, sb.block?.base);
    out.set(c.id, { id: c.id, ok: true, handle: handleOf(sb) });
  } catch (e) {
    out.set(c.id, failed(c.id, e));
  }
}

async function forkWave(
  deps: ForkWaveDeps,
  parent: ParentRef,
  wave: Prepared[],
  sourceId: string | null,
  out: Map<string, SpawnOutcome>,
): Promise<void> {
  if (wave.length === 0) return;
  let results: ChildForkResult[] = [];
  try {
    results = await askParent(parent, wave, sourceId);
  } catch (e) {
    for (const { c } of wave) out.set(c.id, { id: c.id, ok: false, error: toForkboxError(e) });
  }
  const unborn = watchUnborn(parent.hostPid);
  await Promise.all(
    wave.map(async (p) => {
      if (out.has(p.c.id)) return;
      const r = results.find((x) => x.sandbox_id === p.c.id);
      await awaitChild(deps, p, r, unborn, out);
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

export function createForkWaves(deps: ForkWaveDeps): ForkWaves {
  return {
    prepare: (parent, c, sourceId) => prepare(deps, parent, c, sourceId),
    forkWave: (parent, wave, sourceId, out) => forkWave(deps, parent, wave, sourceId, out),
  };
}
