/**
 * The order in which the kernel's OOM killer takes forkbox's processes when the host runs out of memory
 * (a sandbox reaching its own limit is handled inside its memory cgroup). Among equals the kernel takes
 * the largest process; oom_score_adj shifts that. The decision (docs/SECURITY.md, "Admission and the OOM
 * order"): newest forks first, never the daemon —
 *
 * - user code ranks by generation: a sandbox's REPL worker and commands get 100 × (depth + 1), capped at
 *   900 (a sandbox made from a template is depth 0: 100; its forks 200, theirs 300…), so a fork goes
 *   before the sandbox it came from, which is always older. The host sends the rank in the `fork`
 *   request and the child's worker and command spawner set it on themselves (src/agent/sysc.py);
 * - the daemon, templates and sandboxes' agents (PID 1) are exempt (−1000) where the host allows it;
 *   where it does not, a sandbox's PID 1 takes its rank too and the daemon and templates keep 0, below
 *   every sandbox process.
 *
 * Lowering an oom_score_adj below its floor needs CAP_SYS_RESOURCE, which some hosts withhold even from
 * root; raising never does. Without it the daemon is not exempt, only last in line: the kernel adds the
 * rank to a share of memory in thousandths, so it would take the daemon first only if the daemon held
 * more than a tenth of the host's memory above what the largest sandbox process does.
 */
import type { Logger } from '../../../domain/logger.ts';
import { hasCapSysResource, setOomScoreAdj } from '../host/proc.ts';

export const EXEMPT = -1000;

/** oom_score_adj of the user code of a sandbox at `depth` (0 = made from a template), and of its PID 1 when that cannot be exempt. */
export function oomRank(depth: number): number {
  return Math.min(900, 100 * (Math.max(0, depth) + 1));
}

export interface OomOrder {
  /** Whether this host lets forkbox exempt processes (CAP_SYS_RESOURCE). */
  readonly canExempt: boolean;
  /** Set a new sandbox's PID 1: exempt where allowed, else its rank. */
  rank(pid: number, depth: number): void;
  /** Exempt a template's PID 1 (every sandbox of it lives in its pid namespace), where allowed. */
  exemptTemplate(pid: number): void;
  /** Exempt the daemon itself, where allowed (its children inherit it until ranked). */
  exemptDaemon(pid: number): void;
}

export interface OomOrderOptions {
  log: Pick<Logger, 'warn'>;
  canExempt?: boolean;
  /** Write a process's oom_score_adj (default: /proc/<pid>/oom_score_adj); false when refused. */
  setAdj?: (pid: number, value: number) => boolean;
}

export function createOomOrder(opts: OomOrderOptions): OomOrder {
  const canExempt = opts.canExempt ?? hasCapSysResource();
  const setAdj = opts.setAdj ?? setOomScoreAdj;
  const set = (pid: number, value: number) => {
    try {
      if (!setAdj(pid, value)) opts.log.warn({ pid, value }, 'oom_score_adj refused (no CAP_SYS_RESOURCE?)');
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
