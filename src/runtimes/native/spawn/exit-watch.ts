/**
 * Noticing sandboxes that end on their own. A sandbox's agent is its PID 1: when it dies (OOM, killed,
 * crashed) the kernel ends the whole pid namespace and the agent's control connection closes. On every
 * close the host does not expect, the watch looks at PID 1 for a short while: gone or a zombie means the
 * sandbox ended, and it is reported (RuntimeEvents.onSandboxExited) with the reason — the OOM killer when
 * its memory cgroup counted a new OOM kill. A live agent reconnects instead (a dropped connection), and the
 * watch stops. An agent that stops answering (agent-link/liveness.ts) is reported the same way.
 *
 * "Dead" includes dying (host/proc.ts isDying): a PID 1 whose namespace holds a frozen process (a paused
 * snapshot holder, a paused fork child) cannot finish its exit, and a frozen PID 1 takes a SIGKILL only
 * once thawed. So paused sandboxes and sandboxes without a connection are also looked at every second
 * (sweep): one dying is thawed, so that it and its namespace can end, and reported.
 */
import type { Logger } from '../../../domain/logger.ts';
import type { Cgroups } from '../cgroups/index.ts';
import { isDying } from '../host/proc.ts';
import type { LiveSandbox } from './live-sandbox.ts';

/** How long after a close PID 1 is watched before the close is taken for a mere disconnection. */
const WATCH_MS = 3000;
const POLL_MS = 50;

export interface ExitWatchDeps {
  live: Map<string, LiveSandbox>;
  cgroups: Pick<Cgroups, 'oomKills' | 'thaw'>;
  log: Pick<Logger, 'warn'>;
  /** Whose pid namespace a sandbox lives in: false when that PID 1 (template or parent sandbox) is gone. */
  parentRunning(sb: LiveSandbox): boolean;
  onExited(id: string, reason: string): void;
}

export interface ExitWatch {
  /** The sandbox's agent connection closed without the host asking: watches whether its PID 1 died. */
  connectionLost(sb: LiveSandbox): void;
  /** Reports the paused or unconnected sandboxes whose PID 1 is dying, thawing the paused ones first. */
  sweep(): Promise<void>;
  /** The agent stopped answering: reports the sandbox ended, with `message` as the reason. */
  unresponsive(sb: LiveSandbox, message: string): void;
  /** Remembers the OOM count now, so that only a later OOM kill is blamed for a death. */
  noteOoms(sb: LiveSandbox): Promise<void>;
}

export function createExitWatch(deps: ExitWatchDeps): ExitWatch {
  const { live } = deps;
  /** Still the runtime's live sandbox, not killed on request or already reported. */
  const current = (sb: LiveSandbox) => live.get(sb.id) === sb && !sb.ended && !sb.tombstone;

  async function reasonOf(sb: LiveSandbox): Promise<string> {
    const ooms = await deps.cgroups.oomKills(sb.cgroup).catch(() => sb.oomSeen);
    if (ooms > sb.oomSeen)
      return `its agent (PID 1) was killed by the OOM killer: the sandbox reached its memory limit of ${Math.round(sb.memoryBytes / 2 ** 20)} MiB`;
    if (!deps.parentRunning(sb))
      return 'the PID 1 of the template or sandbox it was forked from died, which ends every sandbox in its pid namespace';
    if (sb.paused) return 'its agent (PID 1) was killed while the sandbox was paused';
    return 'its agent (PID 1) exited unexpectedly: it was killed or it crashed';
  }

  function report(sb: LiveSandbox, reason: string): void {
    if (!current(sb)) return;
    sb.ended = true;
    deps.log.warn({ sandbox: sb.id, reason }, 'sandbox ended on its own');
    deps.onExited(sb.id, reason);
  }

  return {
    connectionLost(sb: LiveSandbox): void {
      if (!current(sb) || sb.hostPid <= 0) return;
      const until = Date.now() + WATCH_MS;
      const look = async (): Promise<void> => {
        if (!current(sb) || sb.conn !== null) return; // killed on request, or reconnected
        if (isDying(sb.hostPid, sb.startTime)) {
          report(sb, await reasonOf(sb));
          return;
        }
        if (Date.now() < until) setTimeout(() => void look(), POLL_MS).unref();
      };
      void look();
    },

    /**
     * Paused sandboxes and those without a connection whose PID 1 is dying: thawed (a frozen process
     * takes its SIGKILL, and lets its namespace's init finish exiting, only then) and reported.
     */
    async sweep(): Promise<void> {
      for (const sb of [...live.values()]) {
        if (!current(sb) || sb.hostPid <= 0 || (sb.conn !== null && !sb.paused)) continue;
        if (!isDying(sb.hostPid, sb.startTime)) continue;
        const reason = await reasonOf(sb);
        if (sb.paused) await deps.cgroups.thaw(sb.cgroup).catch(() => undefined);
        report(sb, reason);
      }
    },

    unresponsive(sb: LiveSandbox, message: string): void {
      report(sb, message);
    },

    async noteOoms(sb: LiveSandbox): Promise<void> {
      sb.oomSeen = await deps.cgroups.oomKills(sb.cgroup).catch(() => sb.oomSeen);
    },
  };
}
