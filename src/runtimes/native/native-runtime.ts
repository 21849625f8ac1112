/**
 * The native runtime: sandboxes forked from template containers into fresh namespaces on fresh
 * overlay roots, with per-sandbox cgroups (DESIGN.md 2). Implements the Runtime port.
 */
import { randomBytes } from 'node:crypto';
import { chownSync, mkdirSync, rmdirSync, rmSync } from 'node:fs';
import { freemem, totalmem } from 'node:os';
import { join } from 'node:path';
import { errors, ForkboxError } from '../../domain/errors.ts';
import type { SandboxRecord, TemplateRecord } from '../../domain/types.ts';
import type { ImageCatalog } from '../../service/engine.ts';
import type { CreateSandboxSpec, Runtime, SandboxHandle } from '../../service/ports.ts';
import { type AgentConnection, createAgentConnection } from './agent-connection.ts';
import type { Cgroups } from './cgroups/index.ts';
import { dirSize } from './disk.ts';
import { deadline, type InboxHub, type Logger } from './inbox-hub.ts';
import type { Mounts } from './mounts.ts';
import type { UidRange } from './oci-spec.ts';
import type { NativePaths } from './paths.ts';
import { isAlive, procStartTime, readProcStatus, setOomScoreAdj } from './proc.ts';
import { createSandboxOps } from './sandbox-ops.ts';
import type { Templates } from './templates.ts';

export interface LiveSandbox {
  id: string;
  hostPid: number;
  startTime: number;
  cgroup: string;
  conn: AgentConnection | null;
  /** Resolves when an agent connection is (again) up. */
  connected: Promise<void>;
  paused: boolean;
}

export interface NativeRuntimeDeps {
  paths: NativePaths;
  mounts: Mounts;
  cgroups: Cgroups;
  hub: InboxHub;
  templates: Templates;
  images: Pick<ImageCatalog, 'require'>;
  log: Logger;
  uidRange: UidRange;
  overcommitRatio: number;
  createTimeoutMs?: number;
}

export function createNativeRuntime(deps: NativeRuntimeDeps): Runtime & { live: Map<string, LiveSandbox> } {
  const { paths, mounts, cgroups, hub, templates, log } = deps;
  const live = new Map<string, LiveSandbox>();
  const committed = new Map<string, number>();

  function admit(memoryBytes: number): void {
    const used = [...committed.values()].reduce((a, b) => a + b, 0);
    const budget = totalmem() * deps.overcommitRatio;
    if (used + memoryBytes > budget) {
      throw new ForkboxError(
        'resource_exhausted',
        `creating this sandbox would commit ${Math.round((used + memoryBytes) / 2 ** 20)} MiB of memory limits, over the host budget of ${Math.round(budget / 2 ** 20)} MiB (${deps.overcommitRatio}× ${Math.round(totalmem() / 2 ** 20)} MiB RAM). Kill sandboxes, ask for less memory, or raise FORKBOX_OVERCOMMIT_RATIO.`,
        { committedBytes: used, requestedBytes: memoryBytes, budgetBytes: budget, freeBytes: freemem() },
      );
    }
  }

  /** Listen on a sandbox's control socket; every verified (re)connection becomes its connection. */
  async function serveSandbox(
    sb: LiveSandbox,
    expect: { nonce: string; parentPid: number } | null,
  ): Promise<void> {
    let resolveConnected: () => void = () => undefined;
    sb.connected = new Promise<void>((r) => {
      resolveConnected = r;
    });
    await hub.listen(sb.id, paths.controlSocket(sb.id), {
      verify(hello, cred) {
        if (hello.sandboxId !== sb.id || hello.role !== 'sandbox')
          throw new Error(`hello names ${hello.role} ${hello.sandboxId}`);
        if (sb.hostPid > 0) {
          if (cred.pid !== sb.hostPid)
            throw new Error(`peer pid ${cred.pid} is not the sandbox's PID 1 (${sb.hostPid})`);
          return;
        }
        // First contact of a new sandbox: the peer must be PID 1 of a pid namespace (NSpid ends in 1),
        // a child of the forking parent's PID 1, and know the nonce the host gave the parent.
        const st = readProcStatus(cred.pid);
        if (!expect || !st) throw new Error('unexpected first hello');
        if (st.nsPids[st.nsPids.length - 1] !== 1 || st.ppid !== expect.parentPid) {
          throw new Error(
            `peer pid ${cred.pid} (ppid ${st.ppid}, NSpid ${st.nsPids.join(' ')}) is not a new sandbox PID 1`,
          );
        }
        if (hello.nonce !== expect.nonce) throw new Error('wrong nonce');
      },
      onAgent({ socket, hello, cred }) {
        void (async () => {
          try {
            if (sb.hostPid === 0) {
              sb.hostPid = cred.pid;
              sb.startTime = procStartTime(cred.pid) ?? 0;
              // Place PID 1 before welcoming it: the REPL worker it forks next inherits the cgroups.
              await cgroups.addProcess(sb.cgroup, cred.pid);
              setOomScoreAdj(cred.pid, -1000);
            }
            sb.conn?.close();
            const conn = createAgentConnection(socket, hello);
            sb.conn = conn;
            conn.on('close', () => {
              if (sb.conn === conn) sb.conn = null;
              if (!isAlive(sb.hostPid, sb.startTime) && live.has(sb.id))
                log.warn({ sandbox: sb.id }, 'sandbox PID 1 exited');
            });
            resolveConnected();
          } catch (e) {
            log.warn({ sandbox: sb.id, err: String(e) }, 'could not adopt agent connection');
            socket.destroy();
          }
        })();
      },
    });
  }

  async function connOf(rec: SandboxRecord): Promise<AgentConnection> {
    const sb = live.get(rec.id);
    if (!sb) throw errors.sandboxNotRunning(rec.id, rec.state);
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

  /** Release everything a sandbox holds on the host. Safe to call on a half-made sandbox. */
  async function release(id: string, templateId: string | null): Promise<void> {
    const sb = live.get(id);
    live.delete(id);
    committed.delete(id);
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
      await cgroups.killAll(cg);
      await cgroups.destroy(cg);
    }
    if (templateId) {
      const tInbox = paths.inbox(templateId);
      for (const p of [join(tInbox, id), join(tInbox, `${id}-inbox`)]) {
        mounts.detach(p);
        try {
          rmdirSync(p);
        } catch {
          // not there
        }
      }
    }
    mounts.detachAllUnder(paths.inbox(id));
    rmSync(paths.inbox(id), { recursive: true, force: true });
    rmSync(paths.sandbox(id), { recursive: true, force: true });
  }

  const ops = createSandboxOps({ connOf, cgroups, paths });

  return {
    name: 'native',
    capabilities: {
      forkProcessState: true,
      pause: true,
      limits: { memory: true, pids: true, cpu: true },
      network: false,
    },
    live,
    ...ops,

    async createSandbox(spec: CreateSandboxSpec): Promise<SandboxHandle> {
      admit(spec.limits.memoryBytes);
      committed.set(spec.id, spec.limits.memoryBytes);
      const image = deps.images.require(spec.image);
      let templateId: string | null = null;
      try {
        const tpl = await templates.ensure(image);
        templateId = tpl.id;
        const tplConn = tpl.conn;
        if (!tplConn)
          throw new ForkboxError('unavailable', `template ${tpl.id} is not connected; try again.`);
        const dir = paths.sandbox(spec.id);
        const upper = join(dir, 'upper');
        const work = join(dir, 'work');
        mkdirSync(upper, { recursive: true, mode: 0o755 });
        mkdirSync(work, { recursive: true, mode: 0o700 });
        // The sandbox's `/` is owned by its upper dir's owner: container root.
        chownSync(upper, deps.uidRange.hostStart, deps.uidRange.hostStart);
        const tInbox = paths.inbox(tpl.id);
        const rootMnt = join(tInbox, spec.id);
        const inboxMnt = join(tInbox, `${spec.id}-inbox`);
        mkdirSync(rootMnt, { mode: 0o755 });
        mkdirSync(inboxMnt, { mode: 0o755 });
        // Both appear inside the template at /.forkbox/inbox/<id>[-inbox] by propagation.
        mounts.overlay(rootMnt, image.layers, upper, work);
        mounts.sharedSelfBind(paths.inbox(spec.id));
        mounts.bind(paths.inbox(spec.id), inboxMnt);
        const cg = paths.sandboxCgroup(spec.id);
        await cgroups.create(cg, spec.limits);
        const sb: LiveSandbox = {
          id: spec.id,
          hostPid: 0,
          startTime: 0,
          cgroup: cg,
          conn: null,
          connected: Promise.resolve(),
          paused: false,
        };
        live.set(spec.id, sb);
        const nonce = randomBytes(16).toString('hex');
        await serveSandbox(sb, { nonce, parentPid: tpl.hostPid });
        const { result } = await tplConn.request('fork', {
          children: [
            {
              sandbox_id: spec.id,
              nonce,
              hostname: spec.name.slice(0, 63),
              root: `/.forkbox/inbox/${spec.id}`,
              inbox: `/.forkbox/inbox/${spec.id}-inbox`,
              env: spec.env,
              fork_index: 0,
              parent_id: null,
            },
          ],
        });
        const child = (result.children as { ok: boolean; error?: string }[] | undefined)?.[0];
        if (!child?.ok)
          throw new ForkboxError(
            'internal',
            `the template could not fork sandbox ${spec.id}: ${child?.error ?? 'no result'}`,
          );
        await deadline<void>(
          deps.createTimeoutMs ?? 10000,
          `sandbox ${spec.id}'s agent connecting`,
          (resolve) => void sb.connected.then(resolve),
        );
        // The child has its own private copies of these mounts now; drop the host-side ones.
        mounts.detach(rootMnt);
        mounts.detach(inboxMnt);
        rmdirSync(rootMnt);
        rmdirSync(inboxMnt);
        return {
          id: spec.id,
          hostPid: sb.hostPid,
          runtime: { templateId: tpl.id, cgroup: cg, startTime: sb.startTime },
        };
      } catch (e) {
        await release(spec.id, templateId).catch((err: unknown) =>
          log.warn({ sandbox: spec.id, err: String(err) }, 'cleanup after failed create'),
        );
        throw e;
      }
    },

    async killSandbox(rec: SandboxRecord): Promise<void> {
      const sb = live.get(rec.id);
      if (!sb && rec.hostPid !== null) {
        const st = typeof rec.runtime.startTime === 'number' ? rec.runtime.startTime : 0;
        live.set(rec.id, {
          id: rec.id,
          hostPid: rec.hostPid,
          startTime: st,
          cgroup: paths.sandboxCgroup(rec.id),
          conn: null,
          connected: Promise.resolve(),
          paused: false,
        });
      }
      await release(rec.id, rec.templateId || null);
    },

    async pauseSandbox(rec) {
      const sb = live.get(rec.id);
      if (!sb) throw errors.sandboxNotRunning(rec.id, rec.state);
      await cgroups.freeze(sb.cgroup);
      sb.paused = true;
    },

    async resumeSandbox(rec) {
      const sb = live.get(rec.id);
      if (!sb) throw errors.sandboxNotRunning(rec.id, rec.state);
      await cgroups.thaw(sb.cgroup);
      sb.paused = false;
    },

    async usage(rec) {
      const sb = live.get(rec.id);
      if (!sb) throw errors.sandboxNotRunning(rec.id, rec.state);
      const s = await cgroups.stats(sb.cgroup);
      return {
        memoryBytes: s.memoryBytes,
        cpuUsageNs: s.cpuUsageNs,
        pids: s.pids,
        oomKills: s.oomKills,
        diskBytes: await dirSize(join(paths.sandbox(rec.id), 'upper')),
      };
    },

    async recover(liveRecs: SandboxRecord[], templateRecs: TemplateRecord[], deadlineMs: number) {
      await templates.adopt(templateRecs);
      const lost: string[] = [];
      const waits: Promise<void>[] = [];
      for (const rec of liveRecs) {
        const startTime = typeof rec.runtime.startTime === 'number' ? rec.runtime.startTime : undefined;
        if (rec.hostPid === null || !isAlive(rec.hostPid, startTime)) {
          lost.push(rec.id);
          continue;
        }
        committed.set(rec.id, rec.limits.memoryBytes);
        const sb: LiveSandbox = {
          id: rec.id,
          hostPid: rec.hostPid,
          startTime: startTime ?? 0,
          cgroup: paths.sandboxCgroup(rec.id),
          conn: null,
          connected: Promise.resolve(),
          paused: rec.state === 'paused',
        };
        live.set(rec.id, sb);
        await serveSandbox(sb, null);
        // A sandbox left frozen by a crash mid-operation is thawed; a paused one stays paused (and
        // is never called lost for being silent: a frozen agent cannot reconnect).
        if (rec.state === 'running' && (await cgroups.isFrozen(sb.cgroup))) await cgroups.thaw(sb.cgroup);
        if (rec.state === 'running') {
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
        for (const id of [...live.keys()]) await release(id, null).catch(() => undefined);
        for (const t of templates.list()) await templates.destroy(t.id).catch(() => undefined);
      } else {
        for (const sb of live.values()) sb.conn?.close();
        for (const t of templates.list()) t.conn?.close();
      }
      hub.closeAll();
    },
  };
}
