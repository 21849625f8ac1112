/**
 * The native runtime: sandboxes forked from template containers — or from running sandboxes — into
 * fresh namespaces on fresh overlay roots, with per-sandbox cgroups (DESIGN.md 2). Implements the
 * Runtime port.
 */
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { errors, ForkboxError } from '../../domain/errors.ts';
import type { Logger } from '../../domain/logger.ts';
import { runtimeId as rid } from '../../domain/runtime-id.ts';
import type { SandboxRecord, TemplateRecord } from '../../domain/types.ts';
import type { ImageCatalog } from '../../service/engine.ts';
import type {
  CreateSandboxSpec,
  ForkChildSpec,
  ForkOutcome,
  Runtime,
  SandboxHandle,
} from '../../service/ports.ts';
import { createKeyedQueue } from '../../util/keyed-queue.ts';
import type { AgentConnection } from './agent-link/agent-connection.ts';
import { createExecOps } from './agent-link/exec-ops.ts';
import { createExecSpawners } from './agent-link/exec-spawners.ts';
import type { InboxHub } from './agent-link/inbox-hub.ts';
import { queuedUnlessCancelled } from './agent-link/repl-queue.ts';
import { createSandboxOps } from './agent-link/sandbox-ops.ts';
import type { Cgroups } from './cgroups/index.ts';
import type { UidRange } from './container/oci-spec.ts';
import type { Templates } from './container/templates.ts';
import { createAdmission } from './host/admission.ts';
import { deadline } from './host/deadline.ts';
import type { Mounts } from './host/mounts.ts';
import type { NativePaths } from './host/paths.ts';
import { isAlive, readProcStatus } from './host/proc.ts';
import { createChildSpawner, type LiveSandbox } from './spawn/child-spawner.ts';
import { dirSize } from './storage/disk.ts';
import { diffLayerChains } from './storage/layer-diff.ts';
import type { SnapshotDriver } from './storage/snapshot-driver.ts';

export type { LiveSandbox } from './spawn/child-spawner.ts';

/** Pid namespaces nest at most 32 deep; keep a margin for the template's own. */
export const MAX_FORK_DEPTH = 30;

export interface NativeRuntimeDeps {
  paths: NativePaths;
  mounts: Mounts;
  cgroups: Cgroups;
  hub: InboxHub;
  templates: Templates;
  images: Pick<ImageCatalog, 'require'>;
  snapshots: SnapshotDriver;
  log: Logger;
  uidRange: UidRange;
  overcommitRatio: number;
  createTimeoutMs?: number;
  /** Layers kept although no live sandbox stacks on them (snapshots' files). */
  pinnedLayers?: () => string[];
}

export function createNativeRuntime(deps: NativeRuntimeDeps): Runtime & { live: Map<string, LiveSandbox> } {
  const { paths, cgroups, templates } = deps;
  const live = new Map<string, LiveSandbox>();
  const admission = createAdmission({
    hostMemoryBytes: totalmem(),
    overcommitRatio: deps.overcommitRatio,
    minFreeDiskBytes: 256 * 1024 * 1024,
    stateDir: paths.stateDir,
  });
  /** Per-sandbox REPL serialisation: a fork waits for evals in flight and new evals wait for it. */
  const replLocks = createKeyedQueue();
  const withRepl = replLocks.run;

  const committed = () => [...live.values()].reduce((a, s) => a + s.memoryBytes, 0);
  const spawner = createChildSpawner({ ...deps, live });

  async function connOf(rec: SandboxRecord): Promise<AgentConnection> {
    const sb = live.get(rid(rec));
    if (!sb || sb.tombstone) throw errors.sandboxNotRunning(rec.id, rec.state);
    if (sb.conn) return sb.conn;
    if (!isAlive(sb.hostPid, sb.startTime)) {
      throw new ForkboxError(
        'sandbox_gone',
        `sandbox '${rec.id}' has no processes left (its PID 1 exited). Kill it and create a new one.`,
      );
    }
    await deadline<void>(
      5000,
      `sandbox ${rec.id}'s agent reconnecting`,
      (resolve) => void sb.connected.then(resolve),
    );
    if (!sb.conn)
      throw new ForkboxError('unavailable', `sandbox '${rec.id}' agent is not connected; try again.`);
    return sb.conn;
  }

  const ops = createSandboxOps({ connOf, cgroups, paths });
  const spawners = createExecSpawners({ cgroups });
  const execOps = createExecOps({
    connOf,
    hostOf(rec) {
      const sb = live.get(rid(rec));
      return { id: rid(rec), cgroup: sb?.cgroup ?? paths.sandboxCgroup(rid(rec)), hostPid: sb?.hostPid ?? 0 };
    },
    cgroups,
    spawners,
    oomKills: ops.oomKills,
  });

  /** What a sandbox stores against its disk limit: from the driver's accounting, else a walk of its upper. */
  async function diskUsage(rec: SandboxRecord): Promise<{ diskBytes: number; diskInodes: number | null }> {
    const dir = paths.sandbox(rid(rec));
    const u = deps.snapshots.usage(dir);
    if (u) return { diskBytes: u.bytes, diskInodes: u.inodes };
    return { diskBytes: await dirSize(join(dir, 'upper')), diskInodes: null };
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
    await spawners.exclusive(sb.id, async () => {
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

  return {
    name: 'native',
    capabilities: {
      forkProcessState: true,
      pause: true,
      limits: { memory: true, pids: true, cpu: true, disk: deps.snapshots.diskLimits.enforced },
      network: false,
    },
    live,
    ...ops,
    ...execOps,
    replEval: (rec, code, opts) =>
      queuedUnlessCancelled(withRepl, rid(rec), opts.signal, () => ops.replEval(rec, code, opts)),
    replRestart: (rec) => withRepl(rid(rec), () => ops.replRestart(rec)),

    async createSandbox(spec: CreateSandboxSpec): Promise<SandboxHandle> {
      await admission.check(spec.limits.memoryBytes, committed());
      admission.checkDiskLimit(spec.limits.diskBytes, deps.snapshots.free());
      const image = deps.images.require(spec.image);
      const tpl = await templates.ensure(image, spec.prewarm);
      if (!tpl.conn) throw new ForkboxError('unavailable', `template ${tpl.id} is not connected; try again.`);
      const [out] = await spawner.spawn(
        {
          id: tpl.id,
          hostPid: tpl.hostPid,
          conn: tpl.conn,
          templateId: tpl.id,
          depth: -1,
          lowers: spec.lowers ?? image.layers,
        },
        [{ id: spec.id, name: spec.name, env: spec.env, limits: spec.limits, forkIndex: 0 }],
        null,
      );
      if (!out) throw new ForkboxError('internal', 'no result for the new sandbox');
      if (!out.ok) throw out.error;
      return out.handle;
    },

    async releaseTemplate(imageName: string, prewarm: string[]): Promise<boolean> {
      let image: ReturnType<typeof deps.images.require>;
      try {
        image = deps.images.require(imageName);
      } catch {
        return false; // image gone: its templates go with gc / shutdown
      }
      const tpl = templates.findDedicated(image, prewarm);
      // Every sandbox forked from a template lives in its PID 1's pid namespace: never stop one in use.
      if (!tpl || [...live.values()].some((s) => s.templateId === tpl.id)) return false;
      await templates.destroy(tpl.id);
      deps.log.info({ template: tpl.id, image: imageName }, 'template stopped: its config was deleted');
      return true;
    },

    async forkSandbox(source: SandboxRecord, children: ForkChildSpec[], opts): Promise<ForkOutcome> {
      const sb = live.get(rid(source));
      if (!sb || sb.tombstone) throw errors.sandboxNotRunning(source.id, source.state);
      if (opts?.wait === false && replLocks.busy(rid(source))) {
        throw new ForkboxError(
          'busy',
          `sandbox '${source.id}' is running Python code; fork again when it ends, or fork with wait: true.`,
        );
      }
      const total = children.reduce((a, c) => a + c.limits.memoryBytes, 0);
      await admission.check(total, committed());
      const free = deps.snapshots.free();
      for (const c of children) admission.checkDiskLimit(c.limits.diskBytes, free);
      const deep = sb.depth + 1 >= MAX_FORK_DEPTH;
      return withRepl(rid(source), async () => {
        const conn = await connOf(source);
        const worker = await workerHostPid(sb, conn);
        await sortProcesses(sb, worker);
        // Freeze everything but the agent and the idle worker, freeze the writable layer into a
        // read-only one, thaw. The worker cannot change while we hold its REPL lock, so forking it
        // after the thaw still gives children memory and files of the same instant.
        // Flush the source's dirty data before the pause: a btrfs snapshot would otherwise write it out
        // inside the pause window (348 ms → 4 ms at 300 MB, docs/BENCHMARKS.md).
        await deps.snapshots.prepareFreeze?.(join(paths.sandbox(rid(source)), 'upper'));
        const t0 = performance.now();
        await cgroups.freeze(`${sb.cgroup}/work`);
        let layer: string;
        let snapshotMs: number;
        try {
          const s0 = performance.now();
          layer = await deps.snapshots.freeze(join(paths.sandbox(rid(source)), 'upper'));
          snapshotMs = performance.now() - s0;
        } finally {
          await cgroups.thaw(`${sb.cgroup}/work`);
        }
        const pauseMs = performance.now() - t0;
        const lowers = [layer, ...sb.lowers];
        let results: Awaited<ReturnType<typeof spawner.spawn>>;
        if (deep) {
          // Past the pid-namespace depth limit: a filesystem-only fork from the template.
          const tpl = templates.get(sb.templateId);
          if (!tpl?.conn)
            throw new ForkboxError('unavailable', `template ${sb.templateId} is not connected; try again.`);
          results = await spawner.spawn(
            { id: tpl.id, hostPid: tpl.hostPid, conn: tpl.conn, templateId: tpl.id, depth: -1, lowers },
            children,
            source.id,
          );
        } else {
          // The source's worker clones every child one after another while the children already set
          // themselves up, each in its own cgroup: weigh the source as much as all of them together, or
          // the clones (the fork's critical path) wait behind the children for a CPU.
          await cgroups.setCpuWeight(sb.cgroup, children.length + 1).catch(() => undefined);
          try {
            results = await spawner.spawn(
              { id: sb.id, hostPid: sb.hostPid, conn, templateId: sb.templateId, depth: sb.depth, lowers },
              children,
              source.id,
            );
          } finally {
            await cgroups.setCpuWeight(sb.cgroup, 1).catch(() => undefined);
          }
        }
        // A layer no child took is not kept.
        if (!results.some((r) => r.ok)) await deps.snapshots.remove(layer);
        return {
          pauseMs,
          snapshotMs,
          driver: deps.snapshots.name,
          pythonState: !deep,
          children: results.map((r) => (r.ok ? r : { id: r.id, ok: false as const, error: r.error.message })),
        };
      });
    },

    layerChain(rec: SandboxRecord) {
      const lowers = live.get(rid(rec))?.lowers ?? spawner.fromRecord(rec).lowers;
      if (lowers.length === 0) throw errors.sandboxNotRunning(rec.id, rec.state);
      return { upper: join(paths.sandbox(rid(rec)), 'upper'), lowers };
    },
    diffLayers: diffLayerChains,

    async killSandbox(rec: SandboxRecord, opts): Promise<void> {
      spawners.forget(rid(rec));
      if (!live.has(rid(rec)) && rec.hostPid !== null) live.set(rid(rec), spawner.fromRecord(rec));
      if (opts?.keepInit) {
        await spawner.tombstone(rid(rec));
        return;
      }
      await spawner.release(rid(rec), rec.templateId || null, rec.parentId);
      await spawner.collectLayers();
    },

    async pauseSandbox(rec) {
      const sb = live.get(rid(rec));
      if (!sb) throw errors.sandboxNotRunning(rec.id, rec.state);
      await cgroups.freeze(sb.cgroup);
      sb.paused = true;
    },

    async resumeSandbox(rec) {
      const sb = live.get(rid(rec));
      if (!sb) throw errors.sandboxNotRunning(rec.id, rec.state);
      await cgroups.thaw(sb.cgroup);
      sb.paused = false;
    },

    async usage(rec) {
      const sb = live.get(rid(rec));
      if (!sb) throw errors.sandboxNotRunning(rec.id, rec.state);
      const s = await cgroups.stats(sb.cgroup);
      return {
        memoryBytes: s.memoryBytes,
        cpuUsageNs: s.cpuUsageNs,
        pids: s.pids,
        oomKills: s.oomKills,
        ...(await diskUsage(rec)),
      };
    },

    async recover(liveRecs: SandboxRecord[], templateRecs: TemplateRecord[], deadlineMs: number) {
      await templates.adopt(templateRecs);
      const lost: string[] = [];
      const waits: Promise<void>[] = [];
      for (const rec of liveRecs) {
        const sb = spawner.fromRecord(rec);
        if (!isAlive(sb.hostPid, sb.startTime)) {
          lost.push(rec.id);
          continue;
        }
        live.set(rid(rec), sb);
        await spawner.serve(sb, null);
        // A sandbox left frozen by a crash mid-fork is thawed; a paused one stays paused (and is never
        // called lost for being silent: a frozen agent cannot reconnect).
        if (rec.state === 'running') {
          for (const g of [sb.cgroup, `${sb.cgroup}/work`])
            if (await cgroups.isFrozen(g).catch(() => false)) await cgroups.thaw(g);
          waits.push(
            deadline<void>(
              deadlineMs,
              `sandbox ${rec.id} reconnecting`,
              (resolve) => void sb.connected.then(resolve),
            ).catch(() => {
              lost.push(rec.id);
            }),
          );
        }
      }
      await Promise.all(waits);
      return { lost };
    },

    async shutdown(opts) {
      if (opts.killSandboxes) {
        // Children first: a parent's PID 1 must outlive its descendants' (they live in its pid namespace).
        const byDepth = [...live.values()].sort((a, b) => b.depth - a.depth);
        for (const sb of byDepth) await spawner.release(sb.id, sb.templateId, null).catch(() => undefined);
        await spawner.collectLayers();
        for (const t of templates.list()) await templates.destroy(t.id).catch(() => undefined);
      } else {
        for (const sb of live.values()) sb.conn?.close();
        for (const t of templates.list()) t.conn?.close();
      }
      deps.hub.closeAll();
    },
  };
}
