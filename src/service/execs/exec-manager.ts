/**
 * Execs: running commands in sandboxes, synchronously (bounded inline output, cancellable by an
 * AbortSignal) or in the background (latest output kept, bounded, in the store for `pollExec`), with
 * idempotency keys so a retried request does not run a command twice. A cancel ends the command's whole
 * process tree, also after its main process exited (what it left running).
 */
import { EventEmitter } from 'node:events';
import { ForkboxError } from '../../domain/errors.ts';
import { LIMITS } from '../../domain/limits.ts';
import type { ExecRecord, SandboxRecord } from '../../domain/types.ts';
import type { ExecOutcome, ExecPollResult, ExecRequest, RunOptions, TtySize } from '../api.ts';
import type { Runtime, Store } from '../ports.ts';
import { checkBound, checkTty, DEFAULT_OUTPUT_BYTES, DEFAULT_SPOOL_BYTES } from '../validate.ts';
import { createExecLaunch, type ExecSettings } from './exec-launch.ts';
import { outcome, storedOutcome } from './exec-outcome.ts';
import { createExecOutputBuffer } from './exec-output-buffer.ts';
import { createExecPoller, POLL_PAGE_BYTES } from './exec-poll.ts';
import { recoverExecs } from './exec-recovery.ts';

/**
 * The longest a poll waits for news: well under the 60 s request timeout of common MCP clients. A
 * caller may ask for up to LIMITS.pollWaitMs; a longer wait ends here, with no news, and is asked again.
 */
export const MAX_POLL_WAIT_MS = 30_000;

export interface ExecManagerDeps {
  store: Store;
  runtime: Runtime;
  now: () => number;
  metrics?: { onExecDone(durationMs: number): void };
  /** Daemon defaults for output bounds (per stream). */
  settings?: Partial<ExecSettings>;
  log?: { info(o: object, m?: string): void; warn(o: object, m?: string): void };
}

export interface ExecManager {
  /** Runs a command to its end (or answers with its idempotency key's earlier run); `opts.signal` cancels. */
  run(rec: SandboxRecord, req: ExecRequest, opts?: RunOptions): Promise<ExecOutcome>;
  /** Starts a background exec (or returns the one its idempotency key started) whose output is polled. */
  start(rec: SandboxRecord, req: Omit<ExecRequest, 'stdin'> & { stdin?: boolean }): Promise<ExecRecord>;
  /** The exec's output after `afterSeq`; if none yet and it runs, waits ≤ `waitMs` (and 30 s) for some. */
  poll(
    rec: SandboxRecord,
    execId: string,
    afterSeq?: number,
    waitMs?: number,
    maxBytes?: number,
  ): Promise<ExecPollResult>;
  /** Writes to a running exec's stdin (`eof`: then closes it). */
  writeStdin(rec: SandboxRecord, execId: string, data: Buffer, eof: boolean): Promise<void>;
  /** Resizes a running exec's terminal. */
  resize(rec: SandboxRecord, execId: string, size: TtySize): Promise<void>;
  /** Cancels a running exec (its whole process tree), or ends what an ended one left running. */
  cancel(rec: SandboxRecord, execId: string): Promise<ExecRecord>;
  /** The sandbox's latest 100 execs. */
  list(rec: SandboxRecord): ExecRecord[];
  /** Cancels every running exec of a sandbox being killed and clears its ended execs' leftovers. */
  abandon(sandboxId: string): void;
  /** After a restart: real results of execs that ended meanwhile; the others' trees are killed. */
  recover(sandboxes: SandboxRecord[]): Promise<{ reported: number; interrupted: number }>;
  /** Writes buffered output now (daemon shutdown). */
  flush(): void;
  /** How many execs are running. */
  runningCount(): number;
}

export function createExecManager(deps: ExecManagerDeps): ExecManager {
  const { store, runtime, now } = deps;
  const settings: ExecSettings = {
    outputBytes: deps.settings?.outputBytes ?? DEFAULT_OUTPUT_BYTES,
    spoolBytes: deps.settings?.spoolBytes ?? DEFAULT_SPOOL_BYTES,
  };
  const news = new EventEmitter();
  news.setMaxListeners(0);
  const buffer = createExecOutputBuffer({ store });
  const poller = createExecPoller({ store });
  const launcher = createExecLaunch({
    store,
    runtime,
    now,
    settings,
    buffer,
    changed: (id) => news.emit(`out:${id}`),
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
  });
  const { running } = launcher;

  function waitForChange(execId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        news.off(`out:${execId}`, on);
        resolve();
      }, ms);
      const on = () => {
        clearTimeout(t);
        resolve();
      };
      news.once(`out:${execId}`, on);
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

  async function priorRun(rec: SandboxRecord, key: string): Promise<ExecOutcome | null> {
    const prior = store.findExecByIdempotencyKey(rec.id, key);
    if (!prior) return null;
    while (store.getExec(prior.id)?.state === 'running') await waitForChange(prior.id, 1000);
    return storedOutcome(store, store.getExec(prior.id) ?? prior, now());
  }

  return {
    async run(rec: SandboxRecord, req: ExecRequest, opts?: RunOptions): Promise<ExecOutcome> {
      if (req.idempotencyKey) {
        const prior = await priorRun(rec, req.idempotencyKey);
        if (prior) return prior;
      }
      const { exec, handle, settled } = launcher.launch(rec, req, {
        stdin: req.stdin !== undefined,
        background: false,
        run: opts,
      });
      opts?.onStarted?.(exec.id);
      const signal = opts?.signal;
      const onAbort = () => handle.cancel();
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
      try {
        if (req.stdin !== undefined) {
          handle.writeStdin(req.stdin, true).catch(() => {
            // the command may exit without reading its stdin; its result tells what happened
          });
        }
        const { r } = await settled;
        return outcome(exec.id, r);
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
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
      const { exec, settled } = launcher.launch(rec, rest, { stdin: stdin === true, background: true });
      settled.catch(() => {
        // recorded as failed; pollExec reports it
      });
      return exec;
    },

    async poll(
      rec: SandboxRecord,
      execId: string,
      afterSeq = -1,
      waitMs = 0,
      maxBytes = POLL_PAGE_BYTES,
    ): Promise<ExecPollResult> {
      checkBound(LIMITS.afterSeq, afterSeq);
      checkBound(LIMITS.pollWaitMs, waitMs);
      let exec = mine(rec, execId);
      buffer.flush(execId);
      let page = poller.poll(exec, afterSeq, maxBytes);
      if (page.chunks.length === 0 && exec.state === 'running' && waitMs > 0) {
        await waitForChange(execId, Math.min(waitMs, MAX_POLL_WAIT_MS));
        exec = mine(rec, execId);
        buffer.flush(execId);
        page = poller.poll(exec, afterSeq, maxBytes);
      }
      return { exec, ...page, done: exec.state !== 'running' };
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

    async resize(rec: SandboxRecord, execId: string, size: TtySize): Promise<void> {
      mine(rec, execId);
      const h = running.get(execId);
      if (!h) throw new ForkboxError('conflict', `exec '${execId}' has ended.`, { exec: execId });
      await h.resize(checkTty(size));
    },

    async cancel(rec: SandboxRecord, execId: string): Promise<ExecRecord> {
      const exec = mine(rec, execId);
      const h = running.get(execId);
      if (h) {
        h.cancel();
        await h.result.catch(() => undefined);
        await new Promise((r) => setImmediate(r));
        return store.getExec(execId) ?? exec;
      }
      if (exec.tree === null) return exec;
      await runtime.killExecTree(rec, exec.tree);
      return store.updateExec(execId, { leftovers: 0, tree: null });
    },

    list(rec: SandboxRecord): ExecRecord[] {
      return store.listExecs(rec.id, 100);
    },

    /** Cancel every running exec of a sandbox (it is being killed: what execs left running ends too). */
    abandon(sandboxId: string): void {
      for (const [id, h] of running) {
        const e = store.getExec(id);
        if (e?.sandboxId === sandboxId) h.cancel();
      }
      for (const e of store.listLiveExecs(sandboxId))
        if (e.state !== 'running') store.updateExec(e.id, { leftovers: 0, tree: null });
    },

    recover: (sandboxes: SandboxRecord[]) =>
      recoverExecs({ store, runtime, now, log: deps.log ?? { info() {}, warn() {} } }, sandboxes),

    flush: () => buffer.flushAll(),

    runningCount(): number {
      return running.size;
    },
  };
}
