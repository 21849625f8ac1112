/**
 * The native runtime: sandboxes forked from template containers — or from running sandboxes — into
 * fresh namespaces on fresh overlay roots, with per-sandbox cgroups (docs/ARCHITECTURE.md). Implements
 * the Runtime port; the parts: spawn/ (making and releasing sandboxes), fork-sandbox.ts, recover.ts.
 */

import { join } from 'node:path';
import { errors, ForkboxError } from '../../domain/errors.ts';
import type { Logger } from '../../domain/logger.ts';
import { runtimeId as rid } from '../../domain/runtime-id.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { EgressProxies } from '../../network/egress-proxies.ts';
import type { OpenNats } from '../../network/open-nat.ts';
import { createPublishedPorts, type PortConnectionEvent } from '../../network/published-ports.ts';
import type { ImageStore, Runtime, RuntimeCounters, RuntimeEvents } from '../../service/ports.ts';
import { createKeyedQueue } from '../../util/keyed-queue.ts';
import type { AgentConnection } from './agent-link/agent-connection.ts';
import { type AgentTimeouts, DEFAULT_AGENT_TIMEOUTS } from './agent-link/agent-timeouts.ts';
import { createExecOps } from './agent-link/exec-ops.ts';
import { createExecSpawners } from './agent-link/exec-spawners.ts';
import { createCgroupTrees } from './agent-link/exec-trees.ts';
import type { InboxHub } from './agent-link/inbox-hub.ts';
import { createPortDialer } from './agent-link/port-dialer.ts';
import { queuedUnlessCancelled } from './agent-link/repl-eval.ts';
import { createSandboxOps } from './agent-link/sandbox-ops.ts';
import type { Cgroups } from './cgroups/index.ts';
import type { Templates } from './container/templates.ts';
import { createFromTemplate } from './create-from-template.ts';
import { createForkSandbox } from './fork-sandbox.ts';
import type { Admission } from './host/admission.ts';
import { deadline } from './host/deadline.ts';
import type { FdBudget } from './host/fd-budget.ts';
import type { Mounts } from './host/mounts.ts';
import type { NativePaths } from './host/paths.ts';
import { isDying, isRunning } from './host/proc.ts';
import type { Sys } from './host/sys.ts';
import type { UidRange } from './host/uid-range.ts';
import { createDiffWorkers } from './layers/diff-workers.ts';
import { applyProject } from './layers/project-apply.ts';
import { projectChain } from './layers/project-layer.ts';
import { projectPatch } from './layers/project-patch.ts';
import { projectRenames } from './layers/project-renames.ts';
import type { SnapshotDriver } from './layers/snapshot-driver.ts';
import { createRecover } from './recover.ts';
import { createRevive } from './revive-sandbox.ts';
import { createAdmit } from './runtime-admission.ts';
import { createSandboxLifecycle } from './sandbox-lifecycle.ts';
import { createChildSpawner, type LiveSandbox } from './spawn/child-spawner.ts';
import { createExitWatch } from './spawn/exit-watch.ts';
import type { OomOrder } from './spawn/oom-order.ts';

export { MAX_FORK_DEPTH } from './fork-sandbox.ts';
export type { LiveSandbox } from './spawn/child-spawner.ts';

export interface NativeRuntimeDeps {
  /** Host calls (SO_PEERCRED of the agents' connections on their ports sockets). */
  sys: Pick<Sys, 'peerCred'>;
  paths: NativePaths;
  mounts: Mounts;
  cgroups: Cgroups;
  hub: InboxHub;
  templates: Templates;
  images: Pick<ImageStore, 'require'>;
  snapshots: SnapshotDriver;
  log: Logger;
  uidRange: UidRange;
  admission: Admission;
  oom: OomOrder;
  timeouts?: AgentTimeouts;
  /** The daemon's file descriptors: creates and forks that would eat into its reserve are refused. */
  fds?: FdBudget;
  counters?: RuntimeCounters;
  createTimeoutMs?: number;
  /** Layers kept although no live sandbox stacks on them (snapshots' files). */
  pinnedLayers?: () => string[];
  /** Egress proxies for sandboxes with an `allow` network policy (none: such creates are refused). */
  egress?: EgressProxies;
  /** User-mode NATs of sandboxes with the `open` policy (none: such creates fail). */
  nat?: OpenNats;
  /** Each connection to a published port, accepted or refused (metrics, the audit log). */
  onPortConnection?: (ev: PortConnectionEvent) => void;
}

/** The native runtime: the Runtime port, plus what its host and tests reach directly. */
export interface NativeRuntime extends Runtime {
  live: Map<string, LiveSandbox>;
  /** Stop templates unused since `now − idle` (also every minute on its own): container/templates.ts. */
  reapIdleTemplates(now?: number): Promise<string[]>;
}

export function createNativeRuntime(deps: NativeRuntimeDeps): NativeRuntime {
  const { paths, cgroups, templates } = deps;
  const live = new Map<string, LiveSandbox>();
  let events: RuntimeEvents = {};
  /** Per-sandbox REPL serialisation: a fork waits for evals in flight and new evals wait for it. */
  const replLocks = createKeyedQueue();
  const withRepl = replLocks.run;
  const timeouts = deps.timeouts ?? DEFAULT_AGENT_TIMEOUTS;

  const exits = createExitWatch({
    live,
    cgroups,
    log: deps.log,
    parentRunning(sb) {
      // A parent no longer held is gone: one killed on request while children live stays (a tombstone).
      const parent = live.get(sb.spawnedIn) ?? templates.get(sb.spawnedIn);
      return parent !== undefined && !isDying(parent.hostPid, parent.startTime);
    },
    onExited: (id, reason) => events.onSandboxExited?.(id, reason),
  });
  const dialer = createPortDialer({
    sys: deps.sys,
    log: deps.log,
    target(id) {
      const sb = live.get(id);
      return sb && !sb.tombstone
        ? { hostPid: sb.hostPid, conn: sb.conn, inboxDir: paths.inbox(id) }
        : undefined;
    },
  });
  const published = createPublishedPorts({
    dial: (id, port) => dialer.dial(id, port),
    ...(deps.onPortConnection ? { onConnection: deps.onPortConnection } : {}),
  });
  // Diffs walk trees a sandbox controls: worker threads, off this event loop (diff-workers.ts).
  const diffWorkers = createDiffWorkers();
  const closePorts = (id: string) => {
    published.close(id);
    dialer.close(id);
  };
  const releaseBlock = (ref: { template: string; index: number }) =>
    templates.get(ref.template)?.blocks?.release(ref.index);
  const spawner = createChildSpawner({ ...deps, live, timeouts, exits, closePorts, releaseBlock });
  // OOM kills counted in each sandbox's memory cgroup, looked at every few seconds: when its agent dies,
  // only a kill counted since tells "the OOM killer" from another death (one cheap read per sandbox).
  const oomLook = setInterval(() => {
    for (const sb of live.values()) if (sb.conn) void exits.noteOoms(sb);
  }, 5000);
  oomLook.unref();
  // Deaths no connection close tells of: a paused sandbox's, a PID 1 stuck exiting (spawn/exit-watch.ts).
  const deathLook = setInterval(() => void exits.sweep().catch(() => undefined), 1000);
  deathLook.unref();
  // Templates nobody uses give their uid ranges back (container/templates.ts).
  const templateReap = setInterval(() => void templates.reapIdle().catch(() => undefined), 60_000);
  templateReap.unref();

  async function connOf(rec: SandboxRecord): Promise<AgentConnection> {
    const sb = live.get(rid(rec));
    if (!sb || sb.tombstone) throw errors.sandboxNotRunning(rec.id, rec.state);
    if (sb.conn) return sb.conn;
    if (!isRunning(sb.hostPid, sb.startTime)) {
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

  const ops = createSandboxOps({
    connOf,
    countOomKills: (rec) => cgroups.oomKills(paths.cgroupOf(rec, rid(rec))),
  });
  const spawners = createExecSpawners({ cgroups });
  const execOps = createExecOps({
    connOf,
    hostOf(rec) {
      const sb = live.get(rid(rec));
      return { id: rid(rec), cgroup: sb?.cgroup ?? paths.cgroupOf(rec, rid(rec)), hostPid: sb?.hostPid ?? 0 };
    },
    trees: createCgroupTrees(cgroups),
    spawners,
    oomKills: ops.oomKills,
  });

  const admit = createAdmit({ ...deps, live });
  const lifecycle = createSandboxLifecycle({ ...deps, live, spawner, spawners });
  const forkSandbox = createForkSandbox({ ...deps, spawner, live, replLocks, connOf, admit, spawners });
  const recover = createRecover({ ...deps, spawner, exits, live, inboxOf: paths.inbox });
  const createSandbox = createFromTemplate({ ...deps, admit, spawner });
  const reviveSandbox = createRevive({ spawner, templates, create: createSandbox });

  return {
    name: 'native',
    capabilities: {
      forkProcessState: true,
      pause: true,
      limits: { memory: true, pids: true, cpu: true, disk: deps.snapshots.diskLimits.enforced },
      network: deps.egress !== undefined,
    },
    live,
    reapIdleTemplates: (now) => templates.reapIdle(now),
    ports: {
      publish(rec, port, hostPort) {
        if (!live.has(rid(rec))) throw errors.sandboxNotRunning(rec.id, rec.state);
        return published.publish(rid(rec), port, hostPort);
      },
      connect: (rec, port) => published.connect(rid(rec), port),
      dial: (rec, port) => dialer.dial(rid(rec), port),
    },
    ...ops,
    ...execOps,
    ...lifecycle,
    replEval: (rec, code, opts) =>
      queuedUnlessCancelled(withRepl, rid(rec), opts.signal, () => ops.replEval(rec, code, opts)),
    replRestart: (rec) => withRepl(rid(rec), () => ops.replRestart(rec)),
    setEvents(e) {
      events = e;
    },

    createSandbox: (spec) => createSandbox(spec),
    reviveSandbox,

    async releaseTemplate(imageName: string, prewarm: string[]): Promise<boolean> {
      let image: ReturnType<typeof deps.images.require>;
      try {
        image = deps.images.require(imageName);
      } catch {
        return false; // image gone: its templates go with gc / shutdown
      }
      // Every sandbox forked from a template lives in its PID 1's pid namespace: never stop one in use.
      let stopped = false;
      for (const tpl of templates.findDedicated(image, prewarm)) {
        if ([...live.values()].some((s) => s.templateId === tpl.id)) continue;
        await templates.destroy(tpl.id);
        deps.log.info({ template: tpl.id, image: imageName }, 'template stopped: its config was deleted');
        stopped = true;
      }
      return stopped;
    },

    forkSandbox,

    layerChain(rec: SandboxRecord) {
      const lowers = live.get(rid(rec))?.lowers ?? spawner.fromRecord(rec).lowers;
      if (lowers.length === 0) throw errors.sandboxNotRunning(rec.id, rec.state);
      return { upper: join(paths.sandbox(rid(rec)), 'upper'), lowers };
    },
    diffLayers: (a, b, o) => diffWorkers.diff(a, b, o),
    projectChain(rec: SandboxRecord) {
      const pc = projectChain(this.layerChain(rec));
      return pc && { ...pc, hostPath: pc.info.hostPath, mountPath: pc.info.mountPath };
    },
    projectRenames: (p, diff) => projectRenames(p.hostPath, p, diff),
    projectPatch: (p, diff) => projectPatch(p.hostPath, p, diff),
    applyProject: (p, diff) => applyProject(p.hostPath, p.layer, p, diff),

    recover,

    async shutdown(opts) {
      clearInterval(oomLook);
      clearInterval(deathLook);
      clearInterval(templateReap);
      if (opts.killSandboxes) {
        // Children first: a parent's PID 1 must outlive its descendants' (they live in its pid namespace).
        const byDepth = [...live.values()].sort((a, b) => b.depth - a.depth);
        for (const sb of byDepth) await spawner.release(sb.id, sb.templateId, null).catch(() => undefined);
        await spawner.collectLayers();
        for (const t of templates.list()) await templates.destroy(t.id).catch(() => undefined);
        // Nothing of this state dir runs any more: its own cgroups go too (they would pile up, one set per
        // state dir, across a machine's life). A group that still holds a process stays (rmdir: EBUSY).
        if (live.size === 0 && templates.list().length === 0)
          await cgroups.destroy(paths.stateCgroup).catch((e: unknown) => {
            deps.log.warn({ err: String(e) }, "could not remove this state dir's cgroups");
          });
      } else {
        for (const sb of live.values()) {
          sb.ended = true; // the daemon is going: closing its connections is no sandbox's death
          sb.conn?.close();
        }
        for (const t of templates.list()) t.conn?.close();
      }
      deps.hub.closeAll();
      deps.egress?.closeAll();
      await deps.nat?.stopAll();
      published.closeAll();
      dialer.closeAll();
      await diffWorkers.close();
    },
  };
}
