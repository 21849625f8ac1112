/**
 * Execs: running commands in sandboxes, synchronously or in the background, with output kept (bounded)
 * in the store so `pollExec` can page through it, and idempotency keys so a retried request does not
 * run a command twice.
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { ForkboxError } from '../domain/errors.ts';
import { LIMITS } from '../domain/limits.ts';
import type { ExecRecord, SandboxRecord } from '../domain/types.ts';
import type { ExecOutcome, ExecPollResult, ExecRequest } from './api.ts';
import type { ExecHandle, ExecOutputChunk, ExecResult, Runtime, Store } from './ports.ts';
import { checkBound, checkEnv, checkExec, DEFAULT_OUTPUT_BYTES } from './validate.ts';

export interface ExecManagerDeps {
  store: Store;
  runtime: Runtime;
  now: () => number;
  metrics?: { onExecDone(durationMs: number): void };
}

export function createExecManager(deps: ExecManagerDeps) {
  const { store, runtime, now } = deps;
  const running = new Map<string, ExecHandle>();
  const done = new EventEmitter();
  done.setMaxListeners(0);

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
    };
    store.insertExec(exec);
    return exec;
  }

  function finish(execId: string, r: ExecResult): ExecRecord {
    const state: ExecRecord['state'] = r.timedOut
      ? 'timed_out'
      : r.cancelled
        ? 'cancelled'
        : r.exitCode === null
          ? 'killed'
          : 'exited';
    deps.metrics?.onExecDone(r.durationMs);
    return store.updateExec(execId, {
      state,
      exitCode: r.exitCode,
      signal: r.signal,
      timedOut: r.timedOut,
      // the store may already have marked it truncated when it dropped output beyond its cap
      truncated: r.truncated || store.getExec(execId)?.truncated === true,
      oomKilled: r.oomKilled,
      endedAt: now(),
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
    stdin: boolean,
    onOutput?: (c: ExecOutputChunk) => void,
  ) {
    const form = checkExec(req);
    const env = checkEnv(req.env);
    const cap = req.maxOutputBytes ?? DEFAULT_OUTPUT_BYTES;
    const command = form.argv ?? ['/bin/sh', '-c', form.cmd ?? ''];
    const exec = record(rec, req, command);
    const handle = runtime.exec(
      rec,
      {
        ...form,
        ...(req.cwd === undefined ? {} : { cwd: req.cwd }),
        env,
        stdin,
        timeoutMs: Math.round((req.timeoutSeconds ?? 0) * 1000),
        maxOutputBytes: cap,
      },
      {
        onOutput: (c) => {
          store.appendExecOutput(exec.id, c, cap);
          onOutput?.(c);
          done.emit(`out:${exec.id}`);
        },
      },
    );
    running.set(exec.id, handle);
    const settled = handle.result.then(
      (r) => {
        running.delete(exec.id);
        const final = finish(exec.id, r);
        done.emit(`out:${exec.id}`);
        return { r, final };
      },
      (e: unknown) => {
        running.delete(exec.id);
        fail(exec.id);
        done.emit(`out:${exec.id}`);
        throw e;
      },
    );
    return { exec, handle, settled };
  }

  function outcome(execId: string, r: ExecResult): ExecOutcome {
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
    };
  }

  function storedOutcome(exec: ExecRecord): ExecOutcome {
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
      durationMs: (exec.endedAt ?? now()) - exec.startedAt,
    };
  }

  function waitForChange(execId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        done.off(`out:${execId}`, on);
        resolve();
      }, ms);
      const on = () => {
        clearTimeout(t);
        resolve();
      };
      done.once(`out:${execId}`, on);
    });
  }

  function mine(rec: SandboxRecord, execId: string): ExecRecord {
    const exec = store.getExec(execId);
    if (!exec || exec.sandboxId !== rec.id) {
      throw new ForkboxError(
        'not_found',
        `no exec '${execId}' in sandbox '${rec.id}'. List them with exec_list.`,
        {
          exec: execId,
        },
      );
    }
    return exec;
  }

  return {
    async run(
      rec: SandboxRecord,
      req: ExecRequest,
      onOutput?: (c: ExecOutputChunk) => void,
    ): Promise<ExecOutcome> {
      if (req.idempotencyKey) {
        const prior = store.findExecByIdempotencyKey(rec.id, req.idempotencyKey);
        if (prior) {
          while (store.getExec(prior.id)?.state === 'running') await waitForChange(prior.id, 1000);
          return storedOutcome(store.getExec(prior.id) ?? prior);
        }
      }
      const { exec, handle, settled } = launch(rec, req, req.stdin !== undefined, onOutput);
      if (req.stdin !== undefined) {
        handle.writeStdin(req.stdin, true).catch(() => {
          // the command may exit without reading its stdin; its result tells what happened
        });
      }
      const { r } = await settled;
      return outcome(exec.id, r);
    },

    async start(
      rec: SandboxRecord,
      req: Omit<ExecRequest, 'stdin'> & { stdin?: boolean },
    ): Promise<ExecRecord> {
      if (req.idempotencyKey) {
        const prior = store.findExecByIdempotencyKey(rec.id, req.idempotencyKey);
        if (prior) return prior;
      }
      const { stdin, ...rest } = req;
      const { exec, settled } = launch(rec, rest, stdin === true);
      settled.catch(() => {
        // recorded as failed; pollExec reports it
      });
      return exec;
    },

    async poll(rec: SandboxRecord, execId: string, afterSeq = -1, waitMs = 0): Promise<ExecPollResult> {
      checkBound(LIMITS.afterSeq, afterSeq);
      checkBound(LIMITS.pollWaitMs, waitMs);
      let exec = mine(rec, execId);
      let chunks = store.readExecOutput(execId, afterSeq);
      if (chunks.length === 0 && exec.state === 'running' && waitMs > 0) {
        await waitForChange(execId, waitMs);
        exec = mine(rec, execId);
        chunks = store.readExecOutput(execId, afterSeq);
      }
      const last = chunks[chunks.length - 1];
      return {
        exec,
        chunks: chunks.map((c) => ({ seq: c.seq, stream: c.stream, data: c.data.toString('utf8') })),
        nextSeq: last ? last.seq : afterSeq,
        done: exec.state !== 'running',
      };
    },

    async writeStdin(rec: SandboxRecord, execId: string, data: Buffer, eof: boolean): Promise<void> {
      mine(rec, execId);
      const h = running.get(execId);
      if (!h)
        throw new ForkboxError('conflict', `exec '${execId}' has ended; its stdin is closed.`, {
          exec: execId,
        });
      await h.writeStdin(data, eof);
    },

    async cancel(rec: SandboxRecord, execId: string): Promise<ExecRecord> {
      const exec = mine(rec, execId);
      const h = running.get(execId);
      if (!h) return exec;
      h.cancel();
      await h.result.catch(() => undefined);
      await new Promise((r) => setImmediate(r));
      return store.getExec(execId) ?? exec;
    },

    list(rec: SandboxRecord): ExecRecord[] {
      return store.listExecs(rec.id, 100);
    },

    /** Cancel every running exec of a sandbox (it is being killed). */
    abandon(sandboxId: string): void {
      for (const [id, h] of running) {
        const e = store.getExec(id);
        if (e?.sandboxId === sandboxId) h.cancel();
      }
    },

    runningCount(): number {
      return running.size;
    },
  };
}

export type ExecManager = ReturnType<typeof createExecManager>;
