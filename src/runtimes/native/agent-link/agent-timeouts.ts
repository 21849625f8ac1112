/**
 * Every daemon → agent request has a bound in time. Ops that should be quick (file ops, stats, ping) get a
 * deadline; a fork request (one wave of children) gets a longer one; ops whose length is the user's
 * (exec, repl.eval, stdin fed to a command, a REPL restart that re-imports modules) get none, but while
 * anything waits on an agent, a liveness watchdog pings it: an agent that sends no frame at all for
 * `livenessMs` is unresponsive (stopped, frozen from inside, or wedged), its connection is dropped with a
 * clear error for every waiting caller, and the runtime marks its sandbox failed.
 */
import { ForkboxError } from '../../../domain/errors.ts';

export interface AgentTimeouts {
  /** Deadline of a quick op (file.*, stats, ping, exec.signal, repl.interrupt). */
  requestMs: number;
  /** Deadline of one `fork` request (a wave of up to 16 children). */
  forkMs: number;
  /** Nothing at all from an agent for this long while requests wait on it: it is unresponsive. */
  livenessMs: number;
}

export const DEFAULT_AGENT_TIMEOUTS: AgentTimeouts = {
  requestMs: 30_000,
  forkMs: 120_000,
  livenessMs: 30_000,
};

/** Ops whose duration is the user's: no deadline, only the liveness watchdog. */
const LONG_OPS: ReadonlySet<string> = new Set(['exec', 'exec.stdin', 'repl.eval', 'repl.restart']);

/** The deadline of `op` in ms; 0 = none (the watchdog alone bounds it). */
export function deadlineFor(op: string, t: AgentTimeouts): number {
  if (LONG_OPS.has(op)) return 0;
  return op === 'fork' ? t.forkMs : t.requestMs;
}

const ENV_KEYS = {
  requestMs: 'FORKBOX_AGENT_REQUEST_TIMEOUT_MS',
  forkMs: 'FORKBOX_AGENT_FORK_TIMEOUT_MS',
  livenessMs: 'FORKBOX_AGENT_LIVENESS_MS',
} as const;

/** Timeouts from the environment (the daemon's; tests shorten them), each from 100 ms to 1 hour. */
export function agentTimeoutsFromEnv(env: Record<string, string | undefined>): AgentTimeouts {
  const out = { ...DEFAULT_AGENT_TIMEOUTS };
  for (const [key, name] of Object.entries(ENV_KEYS) as [keyof AgentTimeouts, string][]) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const v = Number(raw);
    if (!Number.isInteger(v) || v < 100 || v > 3_600_000) {
      throw new ForkboxError(
        'invalid_argument',
        `${name} must be a whole number of milliseconds from 100 to 3600000, not '${raw}'.`,
        { [name]: raw },
      );
    }
    out[key] = v;
  }
  return out;
}
