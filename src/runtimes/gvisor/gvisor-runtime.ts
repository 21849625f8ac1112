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
import type { ImageStore, Runtime, RuntimeEvents, SandboxHandle } from '../../service/ports.ts';
import { createKeyedQueue } from '../../util/keyed-queue.ts';
import type { AgentConnection } from '../native/agent-link/agent-connection.ts';
import { type AgentTimeouts, DEFAULT_AGENT_TIMEOUTS } from '../native/agent-link/agent-timeouts.ts';
import { createExecOps } from '../native/agent-link/exec-ops.ts';
import type { InboxHub } from '../native/agent-link/inbox-hub.ts';
import { queuedUnlessCancelled } from '../native/agent-link/repl-eval.ts';
import { createSandboxOps } from '../native/agent-link/sandbox-ops.ts';
import type { Cgroups } from '../native/cgroups/index.ts';
import type { Sys } from '../native/host/sys.ts';
import { GVISOR_CAPABILITIES, unsupported } from './gvisor-capabilities.ts';
import { createGvisorCreate } from './gvisor-create.ts';
import { createAgentSpawners, createAgentTrees } from './gvisor-execs.ts';
import { createGvisorFork } from './gvisor-fork.ts';
import { createGvisorForks } from './gvisor-forks.ts';
import { createGvisorLink, type GvisorSandbox } from './gvisor-link.ts';
import { createGvisorMaker } from './gvisor-make.ts';
import type { GvisorPaths } from './gvisor-paths.ts';
import { createGvisorPausing } from './gvisor-pause.ts';
import { createGvisorRootfs } from './gvisor-rootfs.ts';
import type { Runsc } from './runsc.ts';

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

  const createSandbox = createGvisorCreate({ ...deps, maker, link, live, handleOf });

  const pausing = createGvisorPausing({ runsc: deps.runsc, fork });
  const forks = createGvisorForks({
    fork,
    pausing,
    live,
    queue: replLocks,
    sandboxOf,
    handleOf,
    pythonOf,
    log: deps.log,
  });
  const forkSandbox: Runtime['forkSandbox'] = async (source, children) => {
    if (children.some((c) => c.network && c.network.mode !== 'none')) throw unsupported('network allow/open');
    return forks(source, children);
  };

  async function killSandbox(rec: SandboxRecord): Promise<void> {
    const sb = live.get(rid(rec));
    if (!sb) return;
    live.delete(sb.id);
    await maker.release(sb);
    rmSync(deps.paths.checkpoint(sb.id), { recursive: true, force: true });
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
      for (const id of ids) await maker.removeLeftover(id);
      return { lost: recs.map((r) => r.id) };
    },
    createSandbox,
    forkSandbox,
    killSandbox,
    pauseSandbox: (rec) => pausing.pause(sandboxOf(rec)),
    resumeSandbox: (rec) => pausing.resume(sandboxOf(rec)),
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
        for (const id of await deps.runsc.list().catch(() => [])) await maker.removeLeftover(id);
        rmSync(deps.paths.checkpoints, { recursive: true, force: true });
      }
    },
  };
}
