/**
 * Starting execs and recording their end. A synchronous exec streams its head to the caller and keeps its
 * inline result (head, marker, tail: bounded by its budget) in the store when it ends; a background exec
 * forwards its latest output at a bounded rate into a bounded copy in the store, for polling.
 */
import { randomBytes } from 'node:crypto';
import type { ExecRecord, SandboxRecord } from '../../domain/types.ts';
import type { ExecRequest, RunOptions } from '../api.ts';
import type { ExecHandle, ExecResult, Runtime, Store } from '../ports.ts';
import { checkEnv, checkExec, spoolDefaultFor } from '../validate.ts';
import { endPatch } from './exec-outcome.ts';
import type { ExecOutputBuffer } from './exec-output-buffer.ts';

export interface ExecSettings {
  /** Inline budget per stream when a call gives none. */
  outputBytes: number;
  /** Spool file per stream inside the sandbox when a call gives none. */
  spoolBytes: number;
}

export interface ExecLaunchDeps {
  store: Store;
  runtime: Runtime;
  now: () => number;
  settings: ExecSettings;
  buffer: ExecOutputBuffer;
  /** Something changed for this exec (output, end): wake its pollers. */
  changed(execId: string): void;
  metrics?: { onExecDone(durationMs: number): void };
}

export interface Launched {
  exec: ExecRecord;
  handle: ExecHandle;
  /** The result and the final record; rejects when the exec failed without a result. */
  settled: Promise<{ r: ExecResult; final: ExecRecord }>;
}

export interface ExecLaunch {
  /** Records an exec and starts it: synchronous (head, kept inline at its end) or background (polled). */
  launch(
    rec: SandboxRecord,
    req: Omit<ExecRequest, 'stdin'>,
    opts: { stdin: boolean; background: boolean; run?: RunOptions | undefined },
  ): Launched;
  /** The handles of the execs still running, by exec id. */
  running: Map<string, ExecHandle>;
}

export function createExecLaunch(deps: ExecLaunchDeps): ExecLaunch {
  const { store, runtime, now, settings } = deps;
  const running = new Map<string, ExecHandle>();

  function record(rec: SandboxRecord, req: Omit<ExecRequest, 'stdin'>, command: string[]): ExecRecord {
    const exec: ExecRecord = {
      id: `ex-${randomBytes(6).toString('hex')}`,
      sandboxId: rec.id,
      idempotencyKey: req.idempotencyKey ?? null,
      command,
      state: 'running',
      exitCode: null,
      signal: null,
      timedOut: false,
      truncated: false,
      oomKilled: false,
      startedAt: now(),
      endedAt: null,
      leftovers: 0,
      tree: null,
      streams: null,
    };
    store.insertExec(exec);
    return exec;
  }

  /** A sync exec's inline output (≤ its budget per stream, plus marker lines) and its end, in one write. */
  function finishSync(execId: string, r: ExecResult): ExecRecord {
    return store.atomically(() => {
      const cap = r.stdout.length + r.stderr.length;
      if (r.stdout.length > 0)
        store.appendExecOutput(execId, { seq: 0, stream: 'stdout', data: r.stdout, offset: 0 }, cap);
      if (r.stderr.length > 0)
        store.appendExecOutput(execId, { seq: 1, stream: 'stderr', data: r.stderr, offset: 0 }, cap);
      return store.updateExec(execId, endPatch(r, now()));
    });
  }

  function fail(execId: string): void {
    try {
      store.updateExec(execId, { state: 'failed', endedAt: now() });
    } catch {
      // the exec's sandbox may be gone from the store already
    }
  }

  function launch(
    rec: SandboxRecord,
    req: Omit<ExecRequest, 'stdin'>,
    opts: { stdin: boolean; background: boolean; run?: RunOptions | undefined },
  ): Launched {
    const form = checkExec(req);
    const env = checkEnv(req.env);
    const budget = req.maxOutputBytes ?? settings.outputBytes;
    const command = form.argv ?? ['/bin/sh', '-c', form.cmd ?? ''];
    const exec = record(rec, req, command);
    const { background } = opts;
    // Background: the latest output, up to both streams' budgets together, waits for pollers.
    const ringCap = Math.max(2 * budget, 4096);
    const handle = runtime.exec(
      rec,
      {
        ...form,
        ...(req.cwd === undefined ? {} : { cwd: req.cwd }),
        env,
        stdin: opts.stdin || req.tty !== undefined,
        ...(req.tty ? { tty: { rows: req.tty.rows, cols: req.tty.cols } } : {}),
        timeoutMs: Math.round((req.timeoutSeconds ?? 0) * 1000),
        maxOutputBytes: budget,
        spoolBytes: req.spoolBytes ?? spoolDefaultFor(settings.spoolBytes, rec.limits.diskBytes),
        execId: exec.id,
        mode: background ? 'latest' : 'head',
      },
      {
        onOutput: (c) => {
          if (background) {
            deps.buffer.add(exec.id, c, ringCap);
            deps.changed(exec.id);
          }
          opts.run?.onOutput?.(c);
        },
        ...(opts.run?.onPeek ? { onPeek: opts.run.onPeek } : {}),
      },
    );
    running.set(exec.id, handle);
    const settled = handle.result.then(
      (r) => {
        running.delete(exec.id);
        deps.metrics?.onExecDone(r.durationMs);
        let final: ExecRecord;
        if (background) {
          deps.buffer.flush(exec.id);
          final = store.updateExec(exec.id, endPatch(r, now()));
        } else final = finishSync(exec.id, r);
        deps.changed(exec.id);
        return { r, final };
      },
      (e: unknown) => {
        running.delete(exec.id);
        deps.buffer.flush(exec.id);
        fail(exec.id);
        deps.changed(exec.id);
        throw e;
      },
    );
    return { exec, handle, settled };
  }

  return { launch, running };
}
