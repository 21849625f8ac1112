/**
 * The native runtime's part of start-up recovery: re-adopt templates and live sandboxes (re-listen on
 * their control sockets, thaw what a crash left frozen, wait for agents to reconnect), report those whose
 * PID 1 is gone, and kill the processes nobody owns any more: a new sandbox's PID 1 cloned by a parent's
 * agent just before a crash, before it greeted the host, still sits in its parent's cgroup.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from '../../domain/logger.ts';
import { runtimeId as rid } from '../../domain/runtime-id.ts';
import type { SandboxRecord, TemplateRecord } from '../../domain/types.ts';
import type { EgressProxies } from '../../network/egress-proxies.ts';
import type { OpenNats } from '../../network/open-nat.ts';
import { SNAPSHOT_LABEL } from '../../service/snapshots/snapshot-restore.ts';
import type { Cgroups } from './cgroups/index.ts';
import type { Templates } from './container/templates.ts';
import { deadline } from './host/deadline.ts';
import { isRunning, readProcStatus } from './host/proc.ts';
import type { ChildSpawner, LiveSandbox } from './spawn/child-spawner.ts';
import type { ExitWatch } from './spawn/exit-watch.ts';

export interface RecoverDeps {
  cgroups: Cgroups;
  templates: Templates;
  spawner: ChildSpawner;
  exits: ExitWatch;
  live: Map<string, LiveSandbox>;
  log: Pick<Logger, 'info' | 'warn'>;
  /** Egress proxies: re-opened for recovered sandboxes with an `allow` policy (they died with the daemon). */
  egress?: EgressProxies | undefined;
  inboxOf?: (id: string) => string;
  /** User-mode NATs: started again for recovered `open` sandboxes (theirs exited with the daemon). */
  nat?: OpenNats | undefined;
}

/**
 * Kill every process in `cgroup` that is PID 1 of a child pid namespace and a child of `owner` (its
 * template's or sandbox's PID 1): a sandbox cloned there but never placed in its own cgroup. `known`:
 * host pids of the PID 1s of recorded sandboxes, never killed — a placed sandbox still shows in its
 * template's group in the hierarchies forkbox does not move it in, and `procs` reads them all.
 */
export async function killUnborn(
  cgroups: Cgroups,
  cgroup: string,
  owner: number,
  log: Pick<Logger, 'info'>,
  known: ReadonlySet<number>,
): Promise<number> {
  const depth = readProcStatus(owner)?.nsPids.length;
  if (depth === undefined) return 0;
  let killed = 0;
  for (const pid of await cgroups.procs(cgroup).catch(() => [] as number[])) {
    if (pid === owner || known.has(pid) || !stillIn(pid, cgroup)) continue;
    const st = readProcStatus(pid);
    const ns = st?.nsPids ?? [];
    if (st?.ppid !== owner || ns.length !== depth + 1 || ns[depth] !== 1) continue;
    try {
      process.kill(pid, 'SIGKILL');
      killed += 1;
    } catch {
      // gone meanwhile
    }
  }
  if (killed > 0) log.info({ cgroup, killed }, 'killed sandboxes left unborn by a crash mid-fork');
  return killed;
}

/**
 * Whether `pid` is still in `cgroup` in the memory hierarchy, where every sandbox is placed in its own
 * group: a placed sandbox (a recorded one, or a killed parent kept for its children, which recovery is
 * not given) is not, whatever the other hierarchies say.
 */
function stillIn(pid: number, cgroup: string): boolean {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
  } catch {
    return false;
  }
  const want = `/${cgroup.replace(/^\/+/, '')}`;
  for (const line of text.split('\n')) {
    const [, controllers = '', path] = line.split(':');
    if (controllers.split(',').includes('memory')) return path === want;
  }
  return false;
}

export function createRecover(deps: RecoverDeps) {
  const { cgroups, spawner, live } = deps;

  async function adopt(
    rec: SandboxRecord,
    deadlineMs: number,
    lost: string[],
    known: ReadonlySet<number>,
  ): Promise<Promise<void> | null> {
    const sb = spawner.fromRecord(rec);
    if (!isRunning(sb.hostPid, sb.startTime)) {
      lost.push(rec.id);
      return null;
    }
    // Live again: it holds a reference to its block (given back when it is released).
    if (sb.block) deps.templates.get(sb.block.template)?.blocks?.acquire(sb.block.index);
    live.set(rid(rec), sb);
    await deps.exits.noteOoms(sb);
    await spawner.serve(sb, null);
    // A paused sandbox stays paused (and is never called lost for being silent: a frozen agent cannot
    // reconnect); a running one left frozen by a crash mid-fork is thawed.
    if (rec.state !== 'running') return null;
    for (const g of [sb.cgroup, `${sb.cgroup}/work`])
      if (await cgroups.isFrozen(g).catch(() => false)) await cgroups.thaw(g);
    await killUnborn(cgroups, sb.cgroup, sb.hostPid, deps.log, known);
    return deadline<void>(
      deadlineMs,
      `sandbox ${rec.id} reconnecting`,
      (resolve) => void sb.connected.then(resolve),
    ).catch(() => {
      lost.push(rec.id);
    });
  }

  return async function recover(
    liveRecs: SandboxRecord[],
    templateRecs: TemplateRecord[],
    deadlineMs: number,
  ): Promise<{ lost: string[] }> {
    await deps.templates.adopt(templateRecs);
    const known = new Set(liveRecs.map((rec) => spawner.fromRecord(rec).hostPid).filter((p) => p > 0));
    for (const t of deps.templates.list()) await killUnborn(cgroups, t.cgroup, t.hostPid, deps.log, known);
    const lost: string[] = [];
    const waits: Promise<void>[] = [];
    for (const rec of liveRecs) {
      const wait = await adopt(rec, deadlineMs, lost, known);
      if (wait) waits.push(wait);
    }
    await Promise.all(waits);
    for (const rec of liveRecs) {
      const sb = live.get(rid(rec));
      if (lost.includes(rec.id) || rec.network.mode !== 'open' || !deps.nat || !sb || sb.tombstone) continue;
      if (rec.labels[SNAPSHOT_LABEL] !== undefined) continue; // a snapshot's holder has none (ForkChildSpec.held)
      await deps.nat.start(rid(rec), sb.hostPid, sb.block?.base).catch((e: unknown) => {
        deps.log.warn({ sandbox: rec.id, err: String(e) }, 'could not restart its user-mode NAT');
      });
    }
    for (const rec of liveRecs) {
      if (lost.includes(rec.id) || rec.network.mode !== 'allow' || !deps.egress || !deps.inboxOf) continue;
      await deps.egress.open(rid(rec), deps.inboxOf(rid(rec)), rec.network).catch((e: unknown) => {
        deps.log.warn({ sandbox: rec.id, err: String(e) }, 'could not re-open its egress proxy');
      });
    }
    return { lost };
  };
}
