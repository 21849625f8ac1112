/** How an exec's end is recorded and reported: ExecResult → ExecRecord fields, and → ExecOutcome. */
import type { ExecRecord, ExecState } from '../../domain/types.ts';
import type { ExecOutcome } from '../api.ts';
import type { ExecResult, Store } from '../ports.ts';

export function endState(r: ExecResult): ExecState {
  if (r.timedOut) return 'timed_out';
  if (r.cancelled) return 'cancelled';
  return r.exitCode === null ? 'killed' : 'exited';
}

/** The record's fields once the exec ended with result `r`. */
export function endPatch(
  r: ExecResult,
  endedAt: number,
  state: ExecState = endState(r),
): Partial<ExecRecord> {
  return {
    state,
    exitCode: r.exitCode,
    signal: r.signal,
    timedOut: r.timedOut,
    truncated: r.truncated,
    oomKilled: r.oomKilled,
    endedAt,
    leftovers: r.leftovers,
    tree: r.tree,
    streams: r.streams ?? null,
  };
}

export function outcome(execId: string, r: ExecResult): ExecOutcome {
  return {
    execId,
    exitCode: r.exitCode,
    signal: r.signal,
    stdout: r.stdout.toString('utf8'),
    stderr: r.stderr.toString('utf8'),
    truncated: r.truncated,
    timedOut: r.timedOut,
    oomKilled: r.oomKilled,
    cancelled: r.cancelled,
    durationMs: r.durationMs,
    ...(r.streams ? { streams: r.streams } : {}),
    leftovers: r.leftovers,
  };
}

/** An ended exec's outcome rebuilt from the store (a retried request with the same idempotency key). */
export function storedOutcome(store: Store, exec: ExecRecord, now: number): ExecOutcome {
  const chunks = store.readExecOutput(exec.id, -1);
  const join = (s: 'stdout' | 'stderr') =>
    Buffer.concat(chunks.filter((c) => c.stream === s).map((c) => c.data)).toString('utf8');
  return {
    execId: exec.id,
    exitCode: exec.exitCode,
    signal: exec.signal,
    stdout: join('stdout'),
    stderr: join('stderr'),
    truncated: exec.truncated,
    timedOut: exec.timedOut,
    oomKilled: exec.oomKilled,
    cancelled: exec.state === 'cancelled',
    durationMs: (exec.endedAt ?? now) - exec.startedAt,
    ...(exec.streams ? { streams: exec.streams } : {}),
    leftovers: exec.leftovers,
  };
}
