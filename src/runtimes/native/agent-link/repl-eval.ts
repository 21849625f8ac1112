/**
 * One `repl.eval` over an agent connection (docs/AGENT-PROTOCOL.md, "repl.eval" and "Output of exec and
 * repl.eval"): output arrives as head events while the code runs and as tails just before the result;
 * both are held to the call's budget here too (the agent is untrusted), so what the daemon keeps per call
 * is bounded by max_output_bytes per stream whatever the sandbox sends. Aborting the signal cancels the
 * eval in the agent (KeyboardInterrupt, then a worker restart if it does not stop).
 */
import { randomBytes } from 'node:crypto';
import { AGENT_BOUNDS } from '../../../domain/limits.ts';
import { MiB } from '../../../domain/sizes.ts';
import type { ReplEvalOptions, ReplResult } from '../../../service/ports.ts';
import type { AgentConnection, AgentEvent } from './agent-connection.ts';
import { StreamCollector, type StreamName, tailBudget } from './output.ts';

/** Inline budget per stream when the caller names none. */
export const REPL_DEFAULT_OUTPUT_BYTES = AGENT_BOUNDS.defaultOutputBytes;
/** How much of each stream the agent keeps in its spool file inside the sandbox, by default. */
export const REPL_DEFAULT_SPOOL_BYTES = 64 * MiB;
/** Peek bytes handed on per event (the agent sends at most 2 KiB). */
const PEEK_MAX_BYTES = 2048;

/** A StreamCollector that refuses more head or tail bytes than the call's budget allows. */
class BudgetedStream {
  readonly collector: StreamCollector;
  #headLeft: number;
  #tailLeft: number;

  constructor(stream: StreamName, maxOutputBytes: number) {
    this.collector = new StreamCollector(stream);
    this.#tailLeft = tailBudget(maxOutputBytes);
    this.#headLeft = maxOutputBytes - this.#tailLeft;
  }

  /** The part of `data` within the head budget (what the caller may see live). */
  head(data: Buffer): Buffer {
    const part = data.subarray(0, Math.max(0, this.#headLeft));
    this.#headLeft -= part.length;
    if (part.length > 0) this.collector.addHead(part);
    return part;
  }

  tail(data: Buffer): void {
    const part = data.subarray(Math.max(0, data.length - this.#tailLeft));
    this.#tailLeft -= part.length;
    if (part.length > 0) this.collector.addTail(part);
  }
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

function eventHandler(streams: Record<StreamName, BudgetedStream>, opts: ReplEvalOptions) {
  return (ev: AgentEvent): void => {
    if (ev.kind === 'stdout' || ev.kind === 'stderr') {
      const shown = streams[ev.kind].head(ev.body);
      if (shown.length > 0) opts.onOutput?.({ seq: ev.seq, stream: ev.kind, data: shown });
    } else if (ev.kind === 'stdout_tail' || ev.kind === 'stderr_tail') {
      streams[ev.kind === 'stdout_tail' ? 'stdout' : 'stderr'].tail(ev.body);
    } else if (ev.kind === 'peek' && ev.stream !== undefined) {
      const data = ev.body.subarray(Math.max(0, ev.body.length - PEEK_MAX_BYTES));
      opts.onPeek?.({ stream: ev.stream, data, totalBytes: ev.total ?? 0 });
    }
  };
}

/** Run `code` in the sandbox's REPL; everything but `oomKilled` (the caller reads the cgroup). */
export async function replEvalOver(
  conn: AgentConnection,
  code: string,
  opts: ReplEvalOptions,
): Promise<Omit<ReplResult, 'oomKilled'>> {
  const cap = opts.maxOutputBytes ?? REPL_DEFAULT_OUTPUT_BYTES;
  const streams = { stdout: new BudgetedStream('stdout', cap), stderr: new BudgetedStream('stderr', cap) };
  const s = conn.stream(
    'repl.eval',
    {
      code,
      timeout_ms: opts.timeoutMs ?? 0,
      max_output_bytes: cap,
      output_id: `code-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`,
      spool_bytes: opts.spoolBytes ?? REPL_DEFAULT_SPOOL_BYTES,
      ...(opts.language === 'node' ? { language: 'node' } : {}),
    },
    { onEvent: eventHandler(streams, opts) },
  );
  let cancelled = false;
  const onAbort = (): void => {
    cancelled = true;
    conn.cancel(s.id);
  };
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener('abort', onAbort, { once: true });
  let r: Record<string, unknown>;
  try {
    r = (await s.done).result;
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
  }
  const out = streams.stdout.collector.finish(r);
  const err = streams.stderr.collector.finish(r);
  const e = r.error as { type?: unknown; message?: unknown; traceback?: unknown } | null | undefined;
  const images = Array.isArray(r.images) ? (r.images as { mime?: unknown; data_b64?: unknown }[]) : [];
  return {
    ok: r.ok === true,
    value: typeof r.value === 'string' ? r.value : null,
    stdout: out.data.toString('utf8'),
    stderr: err.data.toString('utf8'),
    error: e ? { type: str(e.type), message: str(e.message), traceback: str(e.traceback) } : null,
    timedOut: r.timed_out === true,
    interrupted: r.interrupted === true,
    cancelled: cancelled || r.cancelled === true,
    restarted: r.restarted === true,
    truncated: r.truncated === true || out.summary.omittedBytes > 0 || err.summary.omittedBytes > 0,
    images: images.map((i) => ({ mime: str(i.mime) || 'image/png', dataB64: str(i.data_b64) })),
    durationMs: num(r.duration_ms),
    streams: { stdout: out.summary, stderr: err.summary },
  };
}

/** The answer to a call dropped from the queue before it ran (its signal was aborted while it waited). */
export function cancelledBeforeStart(): ReplResult {
  const none = { totalBytes: 0, shownBytes: 0, omittedBytes: 0, file: null, spooledBytes: 0 };
  return {
    ok: false,
    value: null,
    stdout: '',
    stderr: '',
    error: {
      type: 'Cancelled',
      message: 'cancelled before it started; the REPL state is unchanged',
      traceback: '',
    },
    timedOut: false,
    interrupted: true,
    cancelled: true,
    restarted: false,
    truncated: false,
    oomKilled: false,
    images: [],
    durationMs: 0,
    streams: { stdout: none, stderr: none },
  };
}

/**
 * Calls to one sandbox's REPL wait in a per-sandbox queue on the host (a fork waits for evals in flight and
 * new evals wait for it). A call whose signal is aborted while it waits is dropped: its caller gets a
 * "cancelled before it started" answer at once, and when its turn comes it runs nothing.
 */
type Run = <T>(key: string, fn: () => Promise<T>) => Promise<T>;

export function queuedUnlessCancelled(
  run: Run,
  key: string,
  signal: AbortSignal | undefined,
  fn: () => Promise<ReplResult>,
): Promise<ReplResult> {
  if (signal === undefined) return run(key, fn);
  if (signal.aborted) return Promise.resolve(cancelledBeforeStart());
  return new Promise<ReplResult>((resolve, reject) => {
    let started = false;
    const onAbort = (): void => {
      if (!started) resolve(cancelledBeforeStart());
    };
    signal.addEventListener('abort', onAbort, { once: true });
    run(key, async () => {
      signal.removeEventListener('abort', onAbort);
      if (signal.aborted) return; // dropped: its caller already has its answer
      started = true;
      try {
        resolve(await fn());
      } catch (e) {
        reject(e);
      }
    }).catch(reject);
  });
}
