/**
 * The gvisor runtime: each sandbox is its own gVisor sandbox (runsc: a user-space kernel, the sentry, in
 * front of the host's), with the forkbox agent as PID 1, so execs, the REPLs and the file API are the
 * native runtime's over the same agent link. What it adds: a fork or snapshot carries every process
 * (gvisor-fork.ts). What it lacks is in its capabilities' `unsupported` and fails naming the runtime.
 */
import { rmSync } from 'node:fs';
import { errors, ForkboxError } from '../../domain/errors.ts';
import type { Logger } from '../../domain/logger.ts';
import { runtimeId as rid } from '../../domain/runtime-id.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type {
  CreateSandboxSpec,
  ForkChildSpec,
  ForkOutcome,
  ImageStore,
  Runtime,
  RuntimeCapabilities,
  RuntimeEvents,
  SandboxHandle,
} from '../../service/ports.ts';
import { createKeyedQueue } from '../../util/keyed-queue.ts';
import type { AgentConnection } from '../native/agent-link/agent-connection.ts';
import { type AgentTimeouts, DEFAULT_AGENT_TIMEOUTS } from '../native/agent-link/agent-timeouts.ts';
import { createExecOps } from '../native/agent-link/exec-ops.ts';
import type { InboxHub } from '../native/agent-link/inbox-hub.ts';
import { queuedUnlessCancelled } from '../native/agent-link/repl-eval.ts';
import { createSandboxOps } from '../native/agent-link/sandbox-ops.ts';
import type { Cgroups } from '../native/cgroups/index.ts';
import type { Sys } from '../native/host/sys.ts';
import { createAgentSpawners, createAgentTrees } from './gvisor-execs.ts';
import { createGvisorFork } from './gvisor-fork.ts';
import { createGvisorLink, type GvisorSandbox } from './gvisor-link.ts';
import { createGvisorMaker } from './gvisor-make.ts';
import type { GvisorPaths } from './gvisor-paths.ts';
import { createGvisorRootfs } from './gvisor-rootfs.ts';
import type { Runsc } from './runsc.ts';

/** How long a new sandbox's agent may take to greet the host (a sentry starting, then python3). */
const CREATE_HELLO_MS = 30_000;

export const GVISOR_CAPABILITIES: RuntimeCapabilities = {
  forkProcessState: true,
  forkProcesses: true,
  pause: true,
  limits: { memory: true, pids: false, cpu: true, disk: false },
  network: false,
  unsupported: [
    'network allow/open (gvisor sandboxes have loopback only)',
    'published ports',
    'disk limits (writes are held in the sandbox memory, bounded by its memory limit)',
    'pids limits',
    'diff and projects',
    'the browser',
    'recovery after a daemon restart',
    'images without python3',
  ],
};

export interface GvisorRuntimeDeps {
  runsc: Runsc;
  paths: GvisorPaths;
  sys: Sys;
  hub: InboxHub;
  cgroups: Cgroups;
  /** Relative cgroup every sentry's group is made under. */
  cgroupParent: string;
  images: Pick<ImageStore, 'require'>;
  agentDir(): string;
  log: Logger;
  timeouts?: AgentTimeouts;
}

export type GvisorRuntime = Runtime;

const unsupported = (what: string) =>
  new ForkboxError(
    'invalid_argument',
    `the gvisor runtime does not support ${what} yet; create the sandbox with runtime native for it.`,
    { runtime: 'gvisor' },
  );

export function createGvisorRuntime(deps: GvisorRuntimeDeps): GvisorRuntime {
  const live = new Map<string, GvisorSandbox>();
  const timeouts = deps.timeouts ?? DEFAULT_AGENT_TIMEOUTS;
  let events: RuntimeEvents = {};
  const replLocks = createKeyedQueue();
  const rootfs = createGvisorRootfs({ sys: deps.sys, skeleton: deps.paths.skeleton });
  const link = createGvisorLink({
    hub: deps.hub,
    log: deps.log,
    timeouts,
    onLost(sb) {
      // The agent reconnects on its own unless its sandbox died: look after a moment.
      setTimeout(() => {
        if (sb.conn || sb.ended) return;
        void deps.runsc.state(sb.id).then((st) => {
          if (sb.ended || (st && st.status !== 'stopped')) return;
          events.onSandboxExited?.(sb.id, 'its gVisor sandbox stopped');
        });
      }, 2000).unref();
    },
  });
  const maker = createGvisorMaker({ ...deps, rootfs, link });
  const fork = createGvisorFork({ ...deps, maker, link });

  const sandboxOf = (rec: SandboxRecord): GvisorSandbox => {
    const sb = live.get(rid(rec));
    if (!sb || sb.ended) throw errors.sandboxNotRunning(rec.id, rec.state);
    return sb;
  };
  const connOf = async (rec: SandboxRecord): Promise<AgentConnection> =>
    link.waitConnected(sandboxOf(rec), 5000, `sandbox ${rec.id}'s agent reconnecting`);
  const handleOf = (sb: GvisorSandbox, python: string): SandboxHandle => ({
    id: sb.id,
    hostPid: sb.hostPid,
    runtime: { kind: 'gvisor', layers: sb.layers, cgroup: sb.cgroup, python },
  });
  const pythonOf = (rec: SandboxRecord): string =>
    typeof rec.runtime.python === 'string' ? rec.runtime.python : '/usr/bin/python3';

  const ops = createSandboxOps({
    connOf,
    countOomKills: (rec) => deps.cgroups.oomKills(sandboxOf(rec).cgroup),
  });
  const execOps = createExecOps({
    connOf,
    hostOf: (rec) => ({ id: rid(rec), cgroup: rid(rec), hostPid: 0 }),
    trees: createAgentTrees({
      connOf: (id) => link.waitConnected(liveById(id), 5000, `sandbox ${id}'s agent`),
    }),
    spawners: createAgentSpawners(),
    oomKills: ops.oomKills,
  });
  function liveById(id: string): GvisorSandbox {
    const sb = live.get(id);
    if (!sb || sb.ended) throw new ForkboxError('sandbox_gone', `sandbox '${id}' is not running.`);
    return sb;
  }

  async function createSandbox(spec: CreateSandboxSpec): Promise<SandboxHandle> {
    if (spec.network && spec.network.mode !== 'none') throw unsupported(`network '${spec.network.mode}'`);
    if (spec.project) throw unsupported('projects');
    const image = deps.images.require(spec.image);
    if (!image.python)
      throw unsupported(
        `image '${spec.image}', which has no python3 (the agent runs on the image's python3)`,
      );
    const python = image.python;
    const sb = await maker.prepare({
      id: spec.id,
      layers: spec.lowers ?? image.layers,
      python,
      env: { ...image.env, ...spec.env },
      ...(image.config ? { execDefaults: { cwd: image.config.workingDir, user: image.config.user } } : {}),
      limits: spec.limits,
    });
    live.set(sb.id, sb);
    try {
      await deps.runsc.run(sb.id, deps.paths.bundle(sb.id), deps.paths.log(sb.id));
      sb.hostPid = (await deps.runsc.state(sb.id))?.pid ?? 0;
      const conn = await link.waitConnected(sb, CREATE_HELLO_MS, `new sandbox ${sb.id}'s agent`);
      await conn.request('ping', {}, { timeoutMs: 10_000 });
      return handleOf(sb, python);
    } catch (e) {
      live.delete(sb.id);
      await maker.release(sb);
      throw e;
    }
  }

  /** Every child of `source` restored from one checkpoint of it (a snapshot's holder is kept paused). */
  async function forkSandbox(source: SandboxRecord, children: ForkChildSpec[]): Promise<ForkOutcome> {
    const src = sandboxOf(source);
    if (children.some((c) => c.network && c.network.mode !== 'none')) throw unsupported('network allow/open');
    return replLocks.run(src.id, async () => {
      const t0 = performance.now();
      const ck = await checkpointEvenPaused(src, source.id);
      try {
        const python = pythonOf(source);
        const base = { layers: src.layers, python };
        const { sandboxes, outcomes } = await fork.restoreAll(ck.image, children, source.id, base);
        for (const sb of sandboxes) live.set(sb.id, sb);
        for (const [i, child] of children.entries()) {
          const o = outcomes[i];
          const sb = sandboxes.find((x) => x.id === child.id);
          if (o?.ok && sb) {
            outcomes[i] = { id: child.id, ok: true, handle: handleOf(sb, python) };
            if (child.held) {
              await pause(sb);
            }
          }
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
  }

  /** Pause (idempotent: runsc refuses to pause a paused container, which it may have left so itself). */
  async function pause(sb: GvisorSandbox): Promise<void> {
    sb.paused = true;
    if ((await deps.runsc.state(sb.id))?.status === 'paused') return;
    try {
      await deps.runsc.pause(sb.id);
    } catch (e) {
      sb.paused = (await deps.runsc.state(sb.id))?.status === 'paused';
      if (!sb.paused) throw e;
    }
  }

  async function resume(sb: GvisorSandbox): Promise<void> {
    if ((await deps.runsc.state(sb.id))?.status !== 'paused') {
      sb.paused = false;
      return;
    }
    await deps.runsc.resume(sb.id);
    sb.paused = false;
  }

  /**
   * A paused source (a snapshot's holder) runs for the moment its agent needs to let go of its connection
   * and the checkpoint takes, then is paused again: its processes move on by that much.
   */
  async function checkpointEvenPaused(src: GvisorSandbox, id: string) {
    if (!src.paused) return fork.checkpoint(src, id);
    await resume(src);
    try {
      return await fork.checkpoint(src, id);
    } finally {
      await pause(src);
    }
  }

  async function killSandbox(rec: SandboxRecord): Promise<void> {
    const sb = live.get(rid(rec));
    if (!sb) return;
    live.delete(sb.id);
    await maker.release(sb);
    rmSync(deps.paths.checkpoint(sb.id), { recursive: true, force: true });
  }

  /** A container and its host side that no live sandbox holds (a crash's, or one a failed kill left). */
  async function removeLeftover(id: string): Promise<void> {
    await deps.runsc.delete(id).catch(() => undefined);
    rootfs.unmount(deps.paths.rootfs(id));
    deps.hub.close(id);
    await deps.cgroups.destroy(`${deps.cgroupParent}/${id}`).catch(() => undefined);
    rmSync(deps.paths.sandbox(id), { recursive: true, force: true });
    rmSync(deps.paths.checkpoint(id), { recursive: true, force: true });
  }

  const notHere = (what: string) => async (): Promise<never> => {
    throw unsupported(what);
  };

  return {
    name: 'gvisor',
    capabilities: GVISOR_CAPABILITIES,
    setEvents(e) {
      events = e;
    },
    async recover(recs) {
      // A gvisor sandbox does not outlive its daemon's runtime state yet: every recorded one is lost, and
      // every container left under this state dir's runsc root (a crash's) is removed with its host side.
      const ids = new Set([...recs.map((r) => rid(r)), ...(await deps.runsc.list().catch(() => []))]);
      for (const id of ids) await removeLeftover(id);
      return { lost: recs.map((r) => r.id) };
    },
    createSandbox,
    forkSandbox,
    killSandbox,
    pauseSandbox: (rec) => pause(sandboxOf(rec)),
    resumeSandbox: (rec) => resume(sandboxOf(rec)),
    async usage(rec) {
      const st = await deps.cgroups.stats(sandboxOf(rec).cgroup);
      return {
        memoryBytes: st.memoryBytes,
        cpuUsageNs: st.cpuUsageNs,
        pids: st.pids,
        diskBytes: 0,
        diskInodes: null,
        oomKills: st.oomKills,
      };
    },
    ...execOps,
    ...ops,
    replEval: (rec, code, opts) =>
      queuedUnlessCancelled(replLocks.run, rid(rec), opts.signal, () => ops.replEval(rec, code, opts)),
    replRestart: (rec) => replLocks.run(rid(rec), () => ops.replRestart(rec)),
    layerChain(rec) {
      throw unsupported(`diff (sandbox '${rec.id}')`);
    },
    diffLayers: notHere('diff'),
    async shutdown(opts) {
      for (const sb of [...live.values()]) {
        if (opts.killSandboxes) {
          live.delete(sb.id);
          await maker.release(sb).catch((e: unknown) => {
            deps.log.warn({ sandbox: sb.id, err: String(e) }, 'could not remove a gvisor sandbox');
          });
        } else {
          sb.ended = true;
          sb.conn?.close();
        }
      }
      if (opts.killSandboxes) {
        for (const id of await deps.runsc.list().catch(() => [])) await removeLeftover(id);
        rmSync(deps.paths.checkpoints, { recursive: true, force: true });
      }
    },
  };
}
