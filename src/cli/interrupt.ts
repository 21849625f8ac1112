/**
 * Ctrl-C (and SIGTERM, SIGHUP) for the commands that run work in a sandbox — `exec`, `run`, `eval`.
 *
 * The first signal aborts the command's requests to the daemon (`signal` below, given to the daemon
 * client): each request's connection is closed, which the daemon takes as its caller leaving and cancels
 * the work. Then the command's own clean-up runs (`run` kills its sandbox) and the process exits with
 * 128+signal, as a shell reports a command killed by it. A second signal exits at once, without waiting
 * for the clean-up.
 */
import { constants } from 'node:os';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** The abort reason of an interrupted request. */
export class InterruptedError extends Error {
  override readonly name = 'AbortError';
  constructor(readonly sig: NodeJS.Signals) {
    super(`interrupted (${sig})`);
  }
}

export interface InterruptOptions {
  /** Clean-up to finish before exiting on the first signal (e.g. kill the command's sandbox). */
  onInterrupt?: (sig: NodeJS.Signals) => Promise<void>;
  /** Said when a second signal cuts the clean-up short (e.g. which sandbox may be left). */
  onForce?: () => void;
  /** For tests: where signals come from, and how the process exits. */
  proc?: Pick<NodeJS.EventEmitter, 'on' | 'off'>;
  exit?: (code: number) => void;
}

export interface InterruptTrap {
  /** Aborted by the first signal. */
  readonly signal: AbortSignal;
  /** Has a signal arrived? */
  readonly fired: boolean;
  /**
   * `p`, unless a signal arrives first: then a promise that never settles, so the command stops where it
   * is while the trap cleans up and exits (an aborted request's rejection is not an error to print).
   */
  settle<T>(p: Promise<T>): Promise<T>;
  /** Stop trapping (the command finished without a signal). */
  release(): void;
}

export const exitCodeForSignal = (sig: NodeJS.Signals): number => 128 + (constants.signals[sig] ?? 2);

export function trapInterrupts(o: InterruptOptions = {}): InterruptTrap {
  const proc = o.proc ?? process;
  const exit = o.exit ?? ((code: number) => process.exit(code));
  const ac = new AbortController();
  let first: NodeJS.Signals | undefined;
  const onSignal = (sig: NodeJS.Signals) => {
    const code = exitCodeForSignal(sig);
    if (first !== undefined) {
      o.onForce?.();
      exit(code);
      return;
    }
    first = sig;
    ac.abort(new InterruptedError(sig));
    const cleanup = o.onInterrupt ? o.onInterrupt(sig) : Promise.resolve();
    void cleanup.catch(() => undefined).finally(() => exit(code));
  };
  for (const s of SIGNALS) proc.on(s, onSignal);
  return {
    signal: ac.signal,
    get fired() {
      return first !== undefined;
    },
    settle<T>(p: Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        p.then(
          (v) => {
            if (first === undefined) resolve(v);
          },
          (e: unknown) => {
            if (first === undefined) reject(e);
          },
        );
      });
    },
    release() {
      for (const s of SIGNALS) proc.off(s, onSignal);
    },
  };
}
