/**
 * The order in which the kernel's OOM killer takes forkbox's processes when the host runs out of memory
 * (a sandbox reaching its own limit is handled inside its memory cgroup). Among equals the kernel takes
 * the largest process; oom_score_adj shifts that:
 *
 * - forks before the sandboxes they came from: a sandbox's PID 1 — and what it forks, its REPL worker —
 *   gets 100 × (depth + 1), capped at 900 (a sandbox made from a template is depth 0: 100; its forks 200…);
 * - sandboxes before templates and the daemon: those keep 0, or −1000 where the host allows lowering.
 *
 * Lowering an oom_score_adj below its floor needs CAP_SYS_RESOURCE, which some hosts withhold even from
 * root; raising never does. With it, the daemon and templates are made exempt (−1000) and a sandbox's
 * agent too (the agent then puts its commands back to 0); without it, the ranks above are all there is,
 * and the daemon competes at 0 — below every sandbox process that kept its rank.
 */
import type { Logger } from '../../../domain/logger.ts';
import { hasCapSysResource, setOomScoreAdj } from '../host/proc.ts';

export const EXEMPT = -1000;

/** oom_score_adj of a sandbox's PID 1 at `depth` (0 = made from a template) when it cannot be exempt. */
export function oomRank(depth: number): number {
  return Math.min(900, 100 * (Math.max(0, depth) + 1));
}

export interface OomOrder {
  /** Whether this host lets forkbox exempt processes (CAP_SYS_RESOURCE). */
  readonly canExempt: boolean;
  /** Set a new sandbox's PID 1. */
  rank(pid: number, depth: number): void;
  /** Exempt a template's PID 1 (every sandbox of it lives in its pid namespace), where allowed. */
  exemptTemplate(pid: number): void;
  /** Exempt the daemon itself, where allowed (its children inherit it until ranked). */
  exemptDaemon(pid: number): void;
}

export function createOomOrder(opts: { log: Pick<Logger, 'warn'>; canExempt?: boolean }): OomOrder {
  const canExempt = opts.canExempt ?? hasCapSysResource();
  const set = (pid: number, value: number) => {
    try {
      setOomScoreAdj(pid, value);
    } catch (e) {
      // The process ended in between (ESRCH surfaces as ENOENT here): nothing to rank.
      opts.log.warn({ pid, value, err: String(e) }, 'could not set oom_score_adj');
    }
  };
  return {
    canExempt,
    rank: (pid, depth) => set(pid, canExempt ? EXEMPT : oomRank(depth)),
    exemptTemplate: (pid) => {
      if (canExempt) set(pid, EXEMPT);
    },
    exemptDaemon: (pid) => {
      if (canExempt) set(pid, EXEMPT);
    },
  };
}
