/**
 * Making sandboxes: the host side of a fork (DESIGN.md 2.3). The same steps serve a create (the parent
 * is a template's agent, the children's lower layers are the image's) and a fork of a running sandbox
 * (the parent is its agent, the lowers are a frozen copy of its upper over its own lowers).
 */
import { randomBytes } from 'node:crypto';
import { chownSync, mkdirSync, rmdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ForkboxError, toForkboxError } from '../../../domain/errors.ts';
import type { Logger } from '../../../domain/logger.ts';
import { runtimeId } from '../../../domain/runtime-id.ts';
import type { SandboxRecord } from '../../../domain/types.ts';
import type { ForkChildSpec, SandboxHandle } from '../../../service/ports.ts';
import { type AgentConnection, createAgentConnection } from '../agent-link/agent-connection.ts';
import type { InboxHub } from '../agent-link/inbox-hub.ts';
import type { Cgroups } from '../cgroups/index.ts';
import { devTmpfsBytes } from '../container/dev-tmpfs.ts';
import type { UidRange } from '../container/oci-spec.ts';
import { deadline } from '../host/deadline.ts';
import type { Mounts } from '../host/mounts.ts';
import type { NativePaths } from '../host/paths.ts';
import { isAlive, procStartTime, readProcStatus, setOomScoreAdj } from '../host/proc.ts';
import type { SnapshotDriver } from '../storage/snapshot-driver.ts';

export interface LiveSandbox {
  id: string;
  hostPid: number;
  startTime: number;
  cgroup: string;
  conn: AgentConnection | null;
  /** Resolves when an agent connection is (again) up. */
  connected: Promise<void>;
  paused: boolean;
  /** Killed, but its PID 1 stays because descendants live in its pid namespace. */
  tombstone: boolean;
  depth: number;
  /** Read-only layers under its upper, newest first. */
  lowers: string[];
  templateId: string;
  parentId: string | null;
  /** Whose inbox its mount points were made in (for clean-up after a crash mid-create). */
  spawnedIn: string;
  memoryBytes: number;
}

export interface ParentRef {
  /** Template or sandbox id (its inbox is where the children's mounts are made). */
  id: string;
  hostPid: number;
  conn: AgentConnection;
  templateId: string;
  /** -1 for a template. */
  depth: number;
  lowers: string[];
}

export type SpawnOutcome =
  | { id: string; ok: true; handle: SandboxHandle }
  | { id: string; ok: false; error: ForkboxError };

/** Children per fork request to the parent's agent (see `spawn`). */
export const FORK_WAVE = 16;

/** Leaves of every sandbox cgroup: a fork freezes `work` while `agent` and `repl` keep running. */
export const LEAVES = ['agent', 'repl', 'work'] as const;

/**
 * Whether `pid` is `ancestor` or a process up to two generations below it. A new sandbox's PID 1 is
 * reparented to the parent's PID 1 once the forking middle process exits, but it may say hello first,
 * while its parent is still that middle process (whose parent is the REPL worker, a child of PID 1).
 */
function descendsFrom(pid: number, ancestor: number): boolean {
  let p = pid;
  for (let hops = 0; hops < 3 && p > 1; hops++) {
    if (p === ancestor) return true;
    p = readProcStatus(p)?.ppid ?? 0;
  }
  return p === ancestor;
}

export function createChildSpawner(deps: {
  paths: NativePaths;
  mounts: Mounts;
  cgroups: Cgroups;
  hub: InboxHub;
  snapshots: SnapshotDriver;
  log: Logger;
  uidRange: UidRange;
  live: Map<string, LiveSandbox>;
  createTimeoutMs?: number;
  pinnedLayers?: () => string[];
}) {
  const { paths, mounts, cgroups, hub, log, live } = deps;
  /** False once writing an oom_score_adj was refused (the host lacks CAP_SYS_RESOURCE). */
  let oomAdjustable = true;

  /**
   * Listen on a sandbox's control socket; every verified (re)connection becomes its connection. For a
   * sandbox being made (`expect`), the returned `ready` settles when it is ready: its PID 1 greets the host
   * right after the clone (and is placed in the sandbox's cgroups then), sets itself up, and only then
   * answers the readiness ping sent with the welcome — or answers it with its set-up's error.
   */
  async function serve(
    sb: LiveSandbox,
    expect: { nonce: string; parentPid: number } | null,
  ): Promise<{ ready: Promise<void> }> {
    let resolveConnected: () => void = () => undefined;
    sb.connected = new Promise<void>((r) => {
      resolveConnected = r;
    });
    let settle: { resolve: () => void; reject: (e: unknown) => void } = {
      resolve: () => undefined,
      reject: () => undefined,
    };
    const ready = new Promise<void>((resolve, reject) => {
      settle = { resolve, reject };
    });
    ready.catch(() => undefined); // spawn awaits it; a sandbox served for recovery never settles it
    await hub.listen(sb.id, paths.controlSocket(sb.id), {
      refused(reason) {
        if (expect && sb.hostPid === 0)
          settle.reject(
            new ForkboxError('internal', `the agent of new sandbox ${sb.id} was refused: ${reason}`),
          );
      },
      verify(hello, cred) {
        if (hello.sandboxId !== sb.id || hello.role !== 'sandbox')
          throw new Error(`hello names ${hello.role} ${hello.sandboxId}`);
        if (sb.hostPid > 0) {
          if (cred.pid !== sb.hostPid)
            throw new Error(`peer pid ${cred.pid} is not the sandbox's PID 1 (${sb.hostPid})`);
          return;
        }
        // First contact: the peer must be PID 1 of a pid namespace (NSpid ends in 1), a child of the
        // forking parent's PID 1, and know the nonce the host gave the parent for it.
        const st = readProcStatus(cred.pid);
        if (!expect || !st) throw new Error('unexpected first hello');
        if (st.nsPids[st.nsPids.length - 1] !== 1 || !descendsFrom(st.ppid, expect.parentPid)) {
          throw new Error(
            `peer pid ${cred.pid} (ppid ${st.ppid}, NSpid ${st.nsPids.join(' ')}) is not a new sandbox PID 1`,
          );
        }
        if (hello.nonce !== expect.nonce) throw new Error('wrong nonce');
      },
      onAgent({ socket, hello, cred }) {
        void (async () => {
          const first = sb.hostPid === 0;
          try {
            if (first) {
              sb.hostPid = cred.pid;
              sb.startTime = procStartTime(cred.pid) ?? 0;
              // Place PID 1 before welcoming it: the REPL worker it forks next inherits the cgroup.
              await cgroups.addProcess(`${sb.cgroup}/agent`, cred.pid);
              // Best effort: hosts without CAP_SYS_RESOURCE keep 0 (doctor reports it), so stop trying.
              if (oomAdjustable) oomAdjustable = setOomScoreAdj(cred.pid, -1000);
            }
            sb.conn?.close();
            // welcome and the readiness ping in one write
            socket.cork();
            const conn = createAgentConnection(socket, hello, { log });
            sb.conn = conn;
            conn.on('close', () => {
              if (sb.conn === conn) sb.conn = null;
            });
            resolveConnected();
            if (first && expect) conn.request('ping').then(() => settle.resolve(), settle.reject);
            socket.uncork();
          } catch (e) {
            log.warn({ sandbox: sb.id, err: String(e) }, 'could not adopt agent connection');
            socket.destroy();
            if (first && expect) settle.reject(e);
          }
        })();
      },
    });
    // Wrapped: an awaited promise of a promise would wait for readiness itself.
    return { ready };
  }

  function handleOf(sb: LiveSandbox): SandboxHandle {
    return {
      id: sb.id,
      hostPid: sb.hostPid,
      runtime: {
        rid: sb.id,
        templateId: sb.templateId,
        cgroup: sb.cgroup,
        startTime: sb.startTime,
        depth: sb.depth,
        lowers: sb.lowers,
        spawnedIn: sb.spawnedIn,
      },
    };
  }

  /** Host-side mount points of a child under its parent's inbox (the child has its own copies). */
  function dropMountPoints(parentId: string, id: string): void {
    for (const p of [join(paths.inbox(parentId), id), join(paths.inbox(parentId), `${id}-inbox`)]) {
      mounts.detach(p);
      try {
        rmdirSync(p);
      } catch {
        // not there
      }
    }
  }

  /** Release everything a sandbox holds on the host. Safe on a half-made sandbox. */
  async function release(id: string, ...inboxOwners: (string | null)[]): Promise<void> {
    const sb = live.get(id);
    live.delete(id);
    sb?.conn?.close('closed because the sandbox was killed');
    hub.close(id);
    const cg = paths.sandboxCgroup(id);
    if (sb && sb.hostPid > 0 && isAlive(sb.hostPid, sb.startTime)) {
      // SIGKILL to PID 1 of the sandbox's pid namespace kills every process in it.
      try {
        process.kill(sb.hostPid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (await cgroups.exists(cg)) {
      // A tombstone's agent leaf is frozen on its own: on cgroup v1 thawing the parent leaves a
      // self-frozen child frozen, and a frozen process never acts on its SIGKILL.
      for (const leaf of LEAVES) {
        if (await cgroups.exists(`${cg}/${leaf}`)) await cgroups.thaw(`${cg}/${leaf}`).catch(() => undefined);
      }
      await cgroups.killAll(cg);
      await cgroups.destroy(cg);
    }
    for (const owner of new Set([...inboxOwners, sb?.spawnedIn ?? null]))
      if (owner) dropMountPoints(owner, id);
    mounts.detachAllUnder(paths.inbox(id));
    rmSync(paths.inbox(id), { recursive: true, force: true });
    // Through the storage driver: on btrfs the sandbox dir is a subvolume (deleted in O(1)).
    await deps.snapshots.removeSandboxDir(paths.sandbox(id));
  }

  async function prepare(
    parent: ParentRef,
    c: ForkChildSpec,
    sourceId: string | null,
  ): Promise<{ sb: LiveSandbox; nonce: string; ready: Promise<void> }> {
    // upper and work come from the storage driver (on btrfs: one fresh subvolume holding both).
    // Bounded by the child's disk limit where the driver enforces one (docs/STORAGE.md).
    const { upper, work } = await deps.snapshots.createSandboxDir(paths.sandbox(c.id), {
      bytes: c.limits.diskBytes,
      inodes: c.limits.diskInodes,
    });
    // The sandbox's `/` is owned by its upper dir's owner: container root.
    chownSync(upper, deps.uidRange.hostStart, deps.uidRange.hostStart);
    const pInbox = paths.inbox(parent.id);
    const rootMnt = join(pInbox, c.id);
    const inboxMnt = join(pInbox, `${c.id}-inbox`);
    mkdirSync(rootMnt, { mode: 0o755 });
    mkdirSync(inboxMnt, { mode: 0o755 });
    // Both appear inside the parent at /.forkbox/inbox/<id>[-inbox] by mount propagation.
    mounts.overlay(rootMnt, parent.lowers, upper, work);
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
    };
    live.set(c.id, sb);
    const nonce = randomBytes(16).toString('hex');
    const { ready } = await serve(sb, { nonce, parentPid: parent.hostPid });
    return { sb, nonce, ready };
  }

  /**
   * Ask the parent's agent to fork one wave of prepared children; record each one's outcome in `out`.
   * Never rejects: every failure becomes that child's outcome.
   */
  async function forkWave(
    parent: ParentRef,
    wave: { c: ForkChildSpec; sb: LiveSandbox; nonce: string; ready: Promise<void> }[],
    sourceId: string | null,
    out: Map<string, SpawnOutcome>,
  ): Promise<void> {
    if (wave.length === 0) return;
    let results: { sandbox_id?: unknown; ok?: unknown; error?: unknown }[] = [];
    try {
      const { result } = await parent.conn.request('fork', {
        children: wave.map(({ c, nonce }) => ({
          sandbox_id: c.id,
          nonce,
          hostname: c.name.slice(0, 63),
          root: `/.forkbox/inbox/${c.id}`,
          inbox: `/.forkbox/inbox/${c.id}-inbox`,
          env: c.env,
          fork_index: c.forkIndex,
          parent_id: sourceId,
          tmpfs_bytes: devTmpfsBytes(c.limits.memoryBytes),
        })),
      });
      results = Array.isArray(result.children) ? (result.children as typeof results) : [];
    } catch (e) {
      for (const { c } of wave) out.set(c.id, { id: c.id, ok: false, error: toForkboxError(e) });
    }
    await Promise.all(
      wave.map(async ({ c, sb, ready }) => {
        if (out.has(c.id)) return;
        const r = results.find((x) => x.sandbox_id === c.id);
        if (r?.ok !== true) {
          const why = typeof r?.error === 'string' ? r.error : 'no result from the parent agent';
          out.set(c.id, {
            id: c.id,
            ok: false,
            error: new ForkboxError('internal', `forking sandbox ${c.id} failed: ${why}`),
          });
          return;
        }
        try {
          await deadline<void>(deps.createTimeoutMs ?? 10000, `sandbox ${c.id} starting`, (resolve, reject) =>
            ready.then(resolve, reject),
          );
          out.set(c.id, { id: c.id, ok: true, handle: handleOf(sb) });
        } catch (e) {
          const err = toForkboxError(e);
          out.set(c.id, {
            id: c.id,
            ok: false,
            error: new ForkboxError(err.code, `forking sandbox ${c.id} failed: ${err.message}`),
          });
        }
      }),
    );
    // Every child of the wave has pivoted into its root (or failed): the parent needs its mount points
    // no more, and each one it keeps would be copied by every later child. Not before: a child's copy
    // of the parent's inbox is a slave of the host's, so the host's unmount would reach it mid-set-up.
    for (const { c } of wave) {
      try {
        dropMountPoints(parent.id, c.id);
      } catch (e) {
        log.warn({ sandbox: c.id, err: String(e) }, 'could not drop a new sandbox’s mount points');
      }
    }
  }

  return {
    serve,
    release,

    /** A live entry for a sandbox known from the store (recovery, or a kill after a restart). */
    fromRecord(rec: SandboxRecord): LiveSandbox {
      const r = rec.runtime;
      return {
        id: runtimeId(rec),
        hostPid: rec.hostPid ?? 0,
        startTime: typeof r.startTime === 'number' ? r.startTime : 0,
        cgroup: paths.sandboxCgroup(runtimeId(rec)),
        conn: null,
        connected: Promise.resolve(),
        paused: rec.state === 'paused',
        tombstone: r.tombstone === true,
        depth: typeof r.depth === 'number' ? r.depth : rec.depth,
        lowers: Array.isArray(r.lowers) ? (r.lowers as string[]) : [],
        templateId: rec.templateId,
        parentId: rec.parentId,
        spawnedIn: typeof r.spawnedIn === 'string' ? r.spawnedIn : rec.templateId,
        memoryBytes: rec.limits.memoryBytes,
      };
    },

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
          wave.map(async (c) => {
            try {
              return { c, ...(await prepare(parent, c, sourceId)) };
            } catch (e) {
              out.set(c.id, { id: c.id, ok: false, error: toForkboxError(e) });
              return null;
            }
          }),
        );
        const previous = inFlight;
        inFlight = forkWave(
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
        if (!o?.ok)
          await release(c.id, parent.id).catch((e: unknown) =>
            log.warn({ sandbox: c.id, err: String(e) }, 'cleanup after failed fork'),
          );
      }
      return children.map(
        (c) => out.get(c.id) ?? { id: c.id, ok: false, error: new ForkboxError('internal', 'no outcome') },
      );
    },

    /** Kill a sandbox's own processes but keep its PID 1 (frozen) for the descendants in its pid namespace. */
    async tombstone(id: string): Promise<void> {
      const sb = live.get(id);
      if (!sb) return;
      sb.tombstone = true;
      sb.conn?.close('closed because the sandbox was killed');
      hub.close(id);
      const agentLeaf = `${sb.cgroup}/agent`;
      for (const p of await cgroups.procs(agentLeaf))
        if (p !== sb.hostPid) await cgroups.addProcess(`${sb.cgroup}/work`, p).catch(() => undefined);
      // Frozen, PID 1 cannot restart the REPL worker we are about to kill.
      await cgroups.freeze(agentLeaf);
      await cgroups.killAll(`${sb.cgroup}/repl`);
      await cgroups.killAll(`${sb.cgroup}/work`);
    },

    /** Remove snapshot layers that no live sandbox (tombstones included) stacks on. */
    async collectLayers(): Promise<void> {
      const used = new Set([...live.values()].flatMap((s) => s.lowers));
      for (const l of deps.pinnedLayers?.() ?? []) used.add(l);
      for (const layer of await deps.snapshots.list())
        if (!used.has(layer)) await deps.snapshots.remove(layer);
    },
  };
}

export type ChildSpawner = ReturnType<typeof createChildSpawner>;
