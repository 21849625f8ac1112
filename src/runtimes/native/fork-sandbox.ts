/**
 * Forking a running sandbox (docs/ARCHITECTURE.md, "Fork"): under the source's REPL lock, sort its
 * processes so its commands can be frozen alone, freeze them, freeze its writable layer into a read-only
 * one, thaw, then spawn the children from its REPL worker — or, past the pid-namespace depth limit, from
 * its template with the source's files only.
 */
import { join } from 'node:path';
import { errors, ForkboxError } from '../../domain/errors.ts';
import { runtimeId as rid } from '../../domain/runtime-id.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { ForkChildSpec, ForkOutcome } from '../../service/ports.ts';
import type { KeyedQueue } from '../../util/keyed-queue.ts';
import type { AgentConnection } from './agent-link/agent-connection.ts';
import type { ExecSpawners } from './agent-link/exec-spawners.ts';
import type { Cgroups } from './cgroups/index.ts';
import type { Templates } from './container/templates.ts';
import { templateParent } from './create-from-template.ts';
import type { NativePaths } from './host/paths.ts';
import { readProcStatus } from './host/proc.ts';
import type { SnapshotDriver } from './layers/snapshot-driver.ts';
import type { ChildSpawner, LiveSandbox, SpawnOutcome } from './spawn/child-spawner.ts';
import type { ChildUids } from './spawn/live-sandbox.ts';

/** Pid namespaces nest at most 32 deep; keep a margin for the template's own. */
export const MAX_FORK_DEPTH = 30;

export interface ForkDeps {
  paths: NativePaths;
  cgroups: Cgroups;
  templates: Templates;
  snapshots: SnapshotDriver;
  spawner: ChildSpawner;
  live: Map<string, LiveSandbox>;
  replLocks: KeyedQueue;
  connOf(rec: SandboxRecord): Promise<AgentConnection>;
  /** Exec spawners' placement: the source's processes are sorted only while none is being placed. */
  spawners: Pick<ExecSpawners, 'exclusive'>;
  /** Admission of `children` more sandboxes (throws when refused). */
  admit(children: ForkChildSpec[]): Promise<void>;
}

export function createForkSandbox(deps: ForkDeps) {
  const { paths, cgroups, live, spawner } = deps;

  /** A fork's children share the source's block (one trust domain); a source from before blocks, its ids. */
  function forkUids(sb: LiveSandbox): ChildUids {
    const blocks = sb.block ? deps.templates.get(sb.block.template)?.blocks : null;
    if (!sb.block) return { kind: 'legacy' };
    if (!blocks)
      throw new ForkboxError(
        'unavailable',
        `template ${sb.block.template} of sandbox ${sb.id} is not running; its sandboxes cannot be forked.`,
      );
    return { kind: 'inherit', template: sb.block.template, blocks, index: sb.block.index };
  }

  /** Host pid of the sandbox's REPL worker (the agent reports its pid in the sandbox's own namespace). */
  async function workerHostPid(sb: LiveSandbox, conn: AgentConnection): Promise<number | null> {
    const { result } = await conn.request('stats', {});
    const nsPid = typeof result.worker_pid === 'number' ? result.worker_pid : null;
    const initDepth = readProcStatus(sb.hostPid)?.nsPids.length;
    if (nsPid === null || initDepth === undefined) return null;
    for (const pid of await cgroups.procs(sb.cgroup)) {
      const st = readProcStatus(pid);
      if (st && st.nsPids.length === initDepth && st.nsPids[st.nsPids.length - 1] === nsPid) return pid;
    }
    return null;
  }

  /**
   * Put the worker in `repl` and every other process but PID 1 in `work`, so `work` can be frozen alone
   * (exec groups are below `work` already). Never while the spawner is being placed in an exec group: this
   * could move it back to `work`.
   */
  async function sortProcesses(sb: LiveSandbox, worker: number | null): Promise<void> {
    await deps.spawners.exclusive(sb.id, async () => {
      if (worker !== null) await cgroups.addProcess(`${sb.cgroup}/repl`, worker);
      for (let round = 0; round < 5; round++) {
        const strays = [
          ...(await cgroups.procs(`${sb.cgroup}/agent`)),
          ...(await cgroups.procs(`${sb.cgroup}/repl`)),
        ].filter((p) => p !== sb.hostPid && p !== worker);
        if (strays.length === 0) return;
        for (const p of strays) await cgroups.addProcess(`${sb.cgroup}/work`, p).catch(() => undefined);
      }
    });
  }

  /** Freeze the source's commands and its writable layer into a read-only one; the pause is timed. */
  async function snapshot(source: SandboxRecord, sb: LiveSandbox) {
    // Flush the source's dirty data before the pause: a btrfs snapshot would otherwise write it out
    // inside the pause window (348 ms → 4 ms at 300 MB, docs/BENCHMARKS.md).
    const upper = join(paths.sandbox(rid(source)), 'upper');
    await deps.snapshots.prepareFreeze?.(upper);
    // A one-step freeze (btrfs) needs the commands held only; a copy walks the upper, so everything that
    // can write it — the agent and the REPL worker's threads too — is frozen while it runs.
    const whole = !deps.snapshots.atomicFreeze;
    const group = whole ? sb.cgroup : `${sb.cgroup}/work`;
    const wasPaused = sb.paused;
    const t0 = performance.now();
    // A frozen agent is silent: while the whole sandbox is, that is no failure (the liveness watchdog).
    if (whole) sb.paused = true;
    await cgroups.freeze(group);
    let layer: string;
    let snapshotMs: number;
    try {
      const s0 = performance.now();
      layer = await deps.snapshots.freeze(upper);
      snapshotMs = performance.now() - s0;
    } finally {
      await cgroups.thaw(group);
      sb.paused = wasPaused;
    }
    return { layer, snapshotMs, pauseMs: performance.now() - t0 };
  }

  async function spawnFrom(
    source: SandboxRecord,
    sb: LiveSandbox,
    conn: AgentConnection,
    lowers: string[],
    children: ForkChildSpec[],
    deep: boolean,
  ): Promise<SpawnOutcome[]> {
    if (deep) {
      // Past the pid-namespace depth limit: a filesystem-only fork from the template.
      const tpl = deps.templates.get(sb.templateId);
      const conn = tpl?.conn;
      if (!tpl || !conn)
        throw new ForkboxError('unavailable', `template ${sb.templateId} is not connected; try again.`);
      return spawner.spawn(templateParent({ ...tpl, conn }, lowers), children, source.id);
    }
    // The source's worker clones every child one after another while the children already set
    // themselves up, each in its own cgroup: weigh the source as much as all of them together, or
    // the clones (the fork's critical path) wait behind the children for a CPU.
    await cgroups.setCpuWeight(sb.cgroup, children.length + 1).catch(() => undefined);
    try {
      return await spawner.spawn(
        {
          id: sb.id,
          hostPid: sb.hostPid,
          conn,
          templateId: sb.templateId,
          depth: sb.depth,
          lowers,
          uids: forkUids(sb),
        },
        children,
        source.id,
      );
    } finally {
      await cgroups.setCpuWeight(sb.cgroup, 1).catch(() => undefined);
    }
  }

  return async function forkSandbox(
    source: SandboxRecord,
    children: ForkChildSpec[],
    opts?: { wait?: boolean },
  ): Promise<ForkOutcome> {
    const sb = live.get(rid(source));
    if (!sb || sb.tombstone) throw errors.sandboxNotRunning(source.id, source.state);
    if (opts?.wait === false && deps.replLocks.busy(rid(source))) {
      throw new ForkboxError(
        'busy',
        `sandbox '${source.id}' is running Python code; fork again when it ends, or fork with wait: true.`,
      );
    }
    await deps.admit(children);
    const deep = sb.depth + 1 >= MAX_FORK_DEPTH;
    return deps.replLocks.run(rid(source), async () => {
      const conn = await deps.connOf(source);
      await sortProcesses(sb, await workerHostPid(sb, conn));
      // Freeze everything but the agent and the idle worker, freeze the writable layer into a read-only
      // one, thaw. The worker cannot change while we hold its REPL lock, so forking it after the thaw
      // still gives children memory and files of the same instant.
      const { layer, snapshotMs, pauseMs } = await snapshot(source, sb);
      const results = await spawnFrom(source, sb, conn, [layer, ...sb.lowers], children, deep);
      // A layer no child took is not kept.
      if (!results.some((r) => r.ok)) await deps.snapshots.remove(layer);
      return {
        pauseMs,
        snapshotMs,
        driver: deps.snapshots.name,
        pythonState: !deep,
        children: results.map((r) =>
          r.ok ? r : { id: r.id, ok: false as const, error: r.error.message, code: r.error.code },
        ),
      };
    });
  };
}
