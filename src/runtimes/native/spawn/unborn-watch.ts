/**
 * Watching children the parent's agent has cloned but that have not greeted the host yet. A child that
 * dies before its greeting (it cannot reach its control socket, its set-up crashed) would otherwise be
 * noticed only when the spawn's deadline passes; here it is noticed at once. The fork result gives each
 * child's pid in the parent's pid namespace; the host finds the matching host process among the parent
 * PID 1's descendants in that namespace (its REPL worker, and the short-lived middle process of the
 * threaded fork path) and watches it. A child not found there for `graceMs` was cloned, died and was
 * reaped.
 */
import { childrenOf, isRunning, readProcStatus } from '../host/proc.ts';

export interface UnbornWatch {
  /** Resolves with a reason when the child `nsPid` (pid in the parent's namespace) is gone. */
  gone(nsPid: number): Promise<string>;
  stop(): void;
}

export function watchUnborn(
  parentHostPid: number,
  opts: { pollMs?: number; graceMs?: number } = {},
): UnbornWatch {
  const pollMs = opts.pollMs ?? 100;
  // Long enough that a scan racing a busy host (a /proc read or a children list taken while processes
  // come and go) cannot call a live child dead; a child that did die is still reported long before the
  // spawn's deadline.
  const graceMs = opts.graceMs ?? 10_000;
  const depth = readProcStatus(parentHostPid)?.nsPids.length ?? 0;
  const nsOf = new Map<number, number[]>();
  const tracked = new Map<
    number,
    { host: number | null; missingSince: number | null; done: (r: string) => void }
  >();
  let timer: NodeJS.Timeout | undefined;

  /** Host pid → pid in the parent's namespace of every new-namespace PID 1 under the parent's PID 1. */
  function scan(): Map<number, number> {
    const found = new Map<number, number>();
    const queue = [parentHostPid];
    for (let hops = 0; hops < 4 && queue.length > 0; hops++) {
      for (const p of queue.splice(0)) {
        for (const c of childrenOf(p)) {
          let ns = nsOf.get(c);
          if (ns === undefined) {
            // Cached only when read: a read that failed (the process between states) is tried again
            // on the next poll instead of hiding that pid's child for the rest of the watch.
            ns = readProcStatus(c)?.nsPids ?? [];
            if (ns.length > 0) nsOf.set(c, ns);
          }
          if (ns.length === depth)
            queue.push(c); // same namespace as the parent: worker, middle process
          else if (ns.length === depth + 1 && ns[depth] === 1) found.set(ns[depth - 1] ?? -1, c);
        }
      }
    }
    return found;
  }

  function poll(): void {
    const now = Date.now();
    const byNs = [...tracked.values()].some((t) => t.host === null) ? scan() : new Map<number, number>();
    for (const [nsPid, t] of tracked) {
      if (t.host === null) {
        const host = byNs.get(nsPid);
        if (host !== undefined) t.host = host;
        else {
          t.missingSince ??= now;
          if (now - t.missingSince >= graceMs) {
            tracked.delete(nsPid);
            t.done(`it exited right after it was cloned, before it could greet the host`);
          }
          continue;
        }
      }
      if (!isRunning(t.host)) {
        tracked.delete(nsPid);
        t.done(`its PID 1 (host pid ${t.host}) exited during its set-up, before it greeted the host`);
      }
    }
    if (tracked.size === 0) stop();
  }

  function stop(): void {
    if (timer !== undefined) clearInterval(timer);
    timer = undefined;
  }

  return {
    gone(nsPid) {
      return new Promise<string>((done) => {
        tracked.set(nsPid, { host: null, missingSince: null, done });
        if (timer === undefined) {
          timer = setInterval(poll, pollMs);
          timer.unref();
        }
      });
    },
    stop() {
      stop();
      tracked.clear();
    },
  };
}
