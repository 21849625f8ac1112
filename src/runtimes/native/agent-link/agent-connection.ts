/**
 * Host side of one agent connection (docs/AGENT-PROTOCOL.md). Wraps a connected socket whose `hello`
 * was read (readHello) and accepted; multiplexes requests by id. Everything the agent sends is untrusted:
 * every field is validated, and a malformed or oversized frame closes this connection only, rejecting
 * its pending requests with an `agent_protocol` error.
 */
import type { Socket } from 'node:net';
import { z } from 'zod';
import { type ErrorCode, ForkboxError } from '../../../domain/errors.ts';
import type { Logger } from '../../../domain/logger.ts';
import { encodeFrame, type Frame, FrameDecoder, type FrameHeader, MAX_BODY_BYTES } from './agent-frame.ts';
import { type AgentLogRelay, createAgentLogRelay } from './agent-log.ts';
import { type AgentTimeouts, DEFAULT_AGENT_TIMEOUTS, deadlineFor } from './agent-timeouts.ts';
import { LivenessWatch } from './liveness.ts';

export const AGENT_PROTOCOL_VERSION = 1;

const helloSchema = z.object({
  t: z.literal('hello'),
  v: z.number().int(),
  role: z.enum(['template', 'sandbox']),
  sandbox_id: z.string().min(1).max(200),
  nonce: z.string().max(512),
  agent_version: z.string().max(64),
  worker_pid: z.number().int().positive().nullable(),
  reconnect: z.boolean(),
});

const resSchema = z.object({
  t: z.literal('res'),
  id: z.number().int().positive(),
  ok: z.boolean(),
  result: z.record(z.string(), z.unknown()).optional(),
  result_in_body: z.boolean().optional(),
  error: z.object({ code: z.string().max(64), message: z.string().max(10_000) }).optional(),
});

const evSchema = z.object({
  t: z.literal('ev'),
  id: z.number().int().positive(),
  kind: z.string().min(1).max(32),
  seq: z.number().int().nonnegative(),
  pid: z.number().int().positive().optional(),
  /** Output events: the position of the body's first byte in its stream. */
  offset: z.number().int().nonnegative().optional(),
  /** `peek` events: which stream, and how many bytes it has had so far. */
  stream: z.enum(['stdout', 'stderr']).optional(),
  total: z.number().int().nonnegative().optional(),
});

export interface AgentHello {
  version: number;
  role: 'template' | 'sandbox';
  sandboxId: string;
  nonce: string;
  agentVersion: string;
  workerPid: number | null;
  reconnect: boolean;
}

export interface AgentResponse {
  result: Record<string, unknown>;
  body: Buffer;
}

export interface AgentEvent {
  kind: string;
  seq: number;
  body: Buffer;
  /** Set on exec's `started` event. */
  pid?: number;
  offset?: number;
  stream?: 'stdout' | 'stderr';
  total?: number;
}

export interface RequestOptions {
  body?: Buffer;
  /**
   * Give up locally after this long (and send `cancel`); 0 = no deadline. Absent: the op's deadline
   * (agent-timeouts.ts: quick ops have one, exec and repl.eval none).
   */
  timeoutMs?: number;
  /**
   * Whether the liveness watchdog covers this request (default true). False for a new sandbox's
   * readiness ping, which its set-up answers only when done, under a deadline of its own.
   */
  watchdog?: boolean;
  onEvent?: (ev: AgentEvent) => void;
}

/** How the agent's error codes surface to forkbox's callers. */
const AGENT_ERRORS: Record<string, ErrorCode> = {
  bad_request: 'invalid_argument',
  not_found: 'not_found',
  is_a_directory: 'invalid_argument',
  not_a_directory: 'invalid_argument',
  exists: 'already_exists',
  permission_denied: 'permission_denied',
  too_large: 'too_large',
  conflict: 'conflict',
  busy: 'busy',
  unknown_op: 'unavailable',
  stale: 'unavailable',
  unavailable: 'unavailable',
  internal: 'internal',
  no_python: 'requirement_missing',
  requirement_missing: 'requirement_missing',
};

function protocolError(what: string, message: string): ForkboxError {
  return new ForkboxError(
    'agent_protocol',
    `the agent of ${what} broke the protocol (${message}); its connection was dropped and it will reconnect`,
  );
}

/** Read and validate the first frame of a new connection (the agent's hello). Destroys the socket on failure. */
export function readHello(socket: Socket, timeoutMs: number): Promise<AgentHello> {
  return new Promise((resolve, reject) => {
    const decoder = new FrameDecoder();
    const finish = (err: ForkboxError | null, hello?: AgentHello): void => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      socket.off('error', onClose);
      socket.pause(); // keep later bytes in the socket until the connection takes over
      if (err !== null || hello === undefined) {
        socket.destroy();
        reject(err);
      } else resolve(hello);
    };
    const onData = (chunk: Buffer): void => {
      let frames: Frame[];
      try {
        frames = decoder.push(chunk);
      } catch (e) {
        finish(e instanceof ForkboxError ? e : protocolError('a new sandbox', String(e)));
        return;
      }
      const first = frames[0];
      if (first === undefined) return;
      if (frames.length > 1 || decoder.bufferedBytes > 0) {
        finish(protocolError('a new sandbox', 'it sent more than a hello before being welcomed'));
        return;
      }
      const parsed = helloSchema.safeParse(first.header);
      if (!parsed.success) {
        finish(protocolError('a new sandbox', `bad hello: ${parsed.error.message.slice(0, 500)}`));
        return;
      }
      const h = parsed.data;
      if (h.v !== AGENT_PROTOCOL_VERSION) {
        finish(
          new ForkboxError(
            'agent_protocol',
            `the agent of ${h.sandbox_id} speaks protocol v${h.v}, this forkbox speaks v${AGENT_PROTOCOL_VERSION}; upgrade forkbox or recreate the sandbox`,
          ),
        );
        return;
      }
      finish(null, {
        version: h.v,
        role: h.role,
        sandboxId: h.sandbox_id,
        nonce: h.nonce,
        agentVersion: h.agent_version,
        workerPid: h.worker_pid,
        reconnect: h.reconnect,
      });
    };
    const onClose = (): void =>
      finish(new ForkboxError('sandbox_gone', 'the sandbox agent disconnected before saying hello'));
    const timer = setTimeout(
      () => finish(new ForkboxError('timeout', `the sandbox agent sent no hello within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.on('data', onData);
    socket.on('close', onClose);
    socket.on('error', onClose);
    socket.resume();
  });
}

interface Pending {
  op: string;
  resolve: (r: AgentResponse) => void;
  reject: (e: ForkboxError) => void;
  onEvent: ((ev: AgentEvent) => void) | undefined;
  nextSeq: number;
  timer: NodeJS.Timeout | undefined;
  watched: boolean;
}

export interface AgentConnectionOptions {
  /** Send `welcome` at once (default true). */
  welcome?: boolean;
  /** Where the agent's `log` frames go (re-capped and rate-limited here); dropped when absent. */
  log?: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Deadlines and the liveness bound (default DEFAULT_AGENT_TIMEOUTS). */
  timeouts?: AgentTimeouts;
  /** True while the agent is frozen on purpose (a paused sandbox): its silence is then no failure. */
  suspended?: () => boolean;
}

export class AgentConnection {
  readonly hello: AgentHello;
  readonly #socket: Socket;
  readonly #decoder = new FrameDecoder();
  readonly #pending = new Map<number, Pending>();
  readonly #closeListeners: ((err: ForkboxError) => void)[] = [];
  readonly #unresponsiveListeners: ((err: ForkboxError) => void)[] = [];
  readonly #timeouts: AgentTimeouts;
  readonly #watch: LivenessWatch;
  #lastId = 0;
  #closedWith: ForkboxError | null = null;
  readonly #logRelay: AgentLogRelay;

  constructor(socket: Socket, hello: AgentHello, opts: AgentConnectionOptions = {}) {
    this.hello = hello;
    this.#socket = socket;
    this.#logRelay = createAgentLogRelay(hello.sandboxId, opts.log);
    this.#timeouts = opts.timeouts ?? DEFAULT_AGENT_TIMEOUTS;
    this.#watch = new LivenessWatch({
      livenessMs: this.#timeouts.livenessMs,
      suspended: opts.suspended ?? (() => false),
      waiting: () => [...this.#pending.values()].some((p) => p.watched),
      ping: () => this.request('ping', {}, { watchdog: false, timeoutMs: 0 }),
      onUnresponsive: (quietMs) => this.#unresponsive(quietMs),
    });
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('error', () => {}); // 'close' follows and carries the consequence
    socket.on('close', () =>
      this.#shutdown(
        new ForkboxError(
          'sandbox_gone',
          `lost the connection to the agent of sandbox '${hello.sandboxId}' (it died or the daemon is stopping); results of requests in flight are lost`,
        ),
      ),
    );
    if (opts.welcome !== false) this.#write({ t: 'welcome', v: AGENT_PROTOCOL_VERSION });
    socket.resume();
  }

  get closed(): boolean {
    return this.#closedWith !== null;
  }

  get pendingCount(): number {
    return this.#pending.size;
  }

  /**
   * 'close': the connection ended (any reason; listeners get the error waiting callers got).
   * 'unresponsive': the agent sent nothing for the liveness bound while requests waited; 'close' follows.
   */
  on(event: 'close' | 'unresponsive', listener: (err: ForkboxError) => void): this {
    if (event === 'unresponsive') {
      this.#unresponsiveListeners.push(listener);
      return this;
    }
    if (event !== 'close') throw new TypeError(`unknown event ${String(event)}`);
    if (this.#closedWith !== null) queueMicrotask(() => listener(this.#closedWith as ForkboxError));
    else this.#closeListeners.push(listener);
    return this;
  }

  request(op: string, args: Record<string, unknown> = {}, opts: RequestOptions = {}): Promise<AgentResponse> {
    return this.stream(op, args, opts).done;
  }

  /** Start a request whose events (exec output) arrive through onEvent; `id` is for cancel / exec.stdin. */
  stream(
    op: string,
    args: Record<string, unknown>,
    opts: RequestOptions,
  ): { id: number; done: Promise<AgentResponse> } {
    const id = ++this.#lastId;
    const done = new Promise<AgentResponse>((resolve, reject) => {
      if (this.#closedWith !== null) {
        reject(this.#closedWith);
        return;
      }
      let frame: Buffer;
      try {
        frame = encodeFrame({ ...args, t: 'req', id, op }, opts.body);
      } catch (e) {
        reject(e);
        return;
      }
      const watched = opts.watchdog !== false;
      const p: Pending = {
        op,
        resolve,
        reject,
        onEvent: opts.onEvent,
        nextSeq: 0,
        timer: undefined,
        watched,
      };
      const timeoutMs = opts.timeoutMs ?? deadlineFor(op, this.#timeouts);
      if (timeoutMs > 0) {
        p.timer = setTimeout(() => {
          this.#pending.delete(id);
          this.cancel(id);
          reject(
            new ForkboxError(
              'timeout',
              `${op} got no answer from the agent of sandbox '${this.hello.sandboxId}' within ${timeoutMs} ms (it is overloaded or stuck); try again, or kill the sandbox if it keeps happening.`,
              { op, timeoutMs },
            ),
          );
        }, timeoutMs);
      }
      this.#pending.set(id, p);
      if (watched) this.#watch.arm();
      this.#socket.write(frame);
    });
    return { id, done };
  }

  /** Ask the agent to abort request `id`; it still answers it (for exec: cancelled: true). */
  cancel(id: number): void {
    if (this.#closedWith === null) this.#write({ t: 'cancel', id });
  }

  close(reason = 'closed by the host'): void {
    this.#shutdown(
      new ForkboxError(
        'sandbox_gone',
        `the connection to the agent of sandbox '${this.hello.sandboxId}' was ${reason}`,
      ),
    );
  }

  #write(header: FrameHeader, body?: Buffer): void {
    this.#socket.write(encodeFrame(header, body));
  }

  #onData(chunk: Buffer): void {
    if (this.#closedWith !== null) return;
    this.#watch.heard();
    try {
      for (const frame of this.#decoder.push(chunk)) {
        this.#onFrame(frame);
        if (this.#closedWith !== null) return;
      }
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      this.#shutdown(protocolError(`sandbox '${this.hello.sandboxId}'`, msg));
    }
  }

  #violation(message: string): never {
    throw new Error(message);
  }

  #onFrame({ header, body }: Frame): void {
    if (header.t === 'res') {
      const r = resSchema.safeParse(header);
      if (!r.success) this.#violation(`bad res: ${r.error.message.slice(0, 300)}`);
      const res = r.data;
      const p = this.#takePending(res.id, 'res');
      if (p === undefined) return;
      if (p.timer !== undefined) clearTimeout(p.timer);
      if (!res.ok) {
        if (res.error === undefined) this.#violation(`res ${res.id} has ok: false and no error`);
        const code = AGENT_ERRORS[res.error.code] ?? 'internal';
        p.reject(new ForkboxError(code, res.error.message, { agentCode: res.error.code, op: p.op }));
        return;
      }
      if (res.result_in_body === true) {
        p.resolve({ result: this.#parseBodyResult(res.id, body), body: Buffer.alloc(0) });
        return;
      }
      if (res.result === undefined) this.#violation(`res ${res.id} has ok: true and no result`);
      p.resolve({ result: res.result, body });
    } else if (header.t === 'ev') {
      const r = evSchema.safeParse(header);
      if (!r.success) this.#violation(`bad ev: ${r.error.message.slice(0, 300)}`);
      const ev = r.data;
      const p = this.#pending.get(ev.id);
      if (p === undefined) {
        if (ev.id > this.#lastId) this.#violation(`ev for request ${ev.id}, which was never sent`);
        return;
      }
      if (ev.seq !== p.nextSeq)
        this.#violation(`ev seq ${ev.seq} for request ${ev.id}, expected ${p.nextSeq}`);
      p.nextSeq += 1;
      const out: AgentEvent = { kind: ev.kind, seq: ev.seq, body };
      if (ev.pid !== undefined) out.pid = ev.pid;
      if (ev.offset !== undefined) out.offset = ev.offset;
      if (ev.stream !== undefined) out.stream = ev.stream;
      if (ev.total !== undefined) out.total = ev.total;
      try {
        p.onEvent?.(out);
      } catch (e) {
        // The caller's handler failed: that request fails with its error (the agent is not at fault).
        this.#pending.delete(ev.id);
        if (p.timer !== undefined) clearTimeout(p.timer);
        this.cancel(ev.id);
        p.reject(
          e instanceof ForkboxError
            ? e
            : new ForkboxError('internal', `exec event handler failed: ${String(e)}`),
        );
      }
    } else if (header.t === 'log') {
      if (!this.#logRelay.take(header)) this.#violation('bad log frame');
    } else {
      this.#violation(`unexpected message kind '${header.t.slice(0, 32)}'`);
    }
  }

  #takePending(id: number, what: string): Pending | undefined {
    const p = this.#pending.get(id);
    if (p === undefined) {
      // A late answer to a request we gave up on is fine; one to a request never sent is not.
      if (id > this.#lastId) this.#violation(`${what} for request ${id}, which was never sent`);
      return undefined;
    }
    this.#pending.delete(id);
    return p;
  }

  #parseBodyResult(id: number, body: Buffer): Record<string, unknown> {
    if (body.length > MAX_BODY_BYTES) this.#violation(`result of request ${id} is too large`);
    let value: unknown;
    try {
      value = JSON.parse(body.toString('utf8'));
    } catch {
      this.#violation(`result_in_body of request ${id} is not JSON`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      this.#violation(`result_in_body of request ${id} is not an object`);
    }
    return value as Record<string, unknown>;
  }

  #unresponsive(quietMs: number): void {
    if (this.#closedWith !== null) return;
    const secs = Math.round(quietMs / 100) / 10;
    const err = new ForkboxError(
      'sandbox_gone',
      `the agent of sandbox '${this.hello.sandboxId}' stopped answering: nothing from it for ${secs} s while requests waited (it was stopped, frozen or wedged). The sandbox is marked failed and its processes are killed; create a new one.`,
      { sandbox: this.hello.sandboxId, quietMs, reason: 'unresponsive' },
    );
    for (const l of this.#unresponsiveListeners.splice(0)) l(err);
    this.#shutdown(err);
  }

  #shutdown(err: ForkboxError): void {
    if (this.#closedWith !== null) return;
    this.#closedWith = err;
    this.#watch.stop();
    this.#socket.destroy();
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) {
      if (p.timer !== undefined) clearTimeout(p.timer);
      p.reject(err);
    }
    for (const l of this.#closeListeners.splice(0)) l(err);
  }
}

export function createAgentConnection(
  socket: Socket,
  hello: AgentHello,
  opts?: AgentConnectionOptions,
): AgentConnection {
  return new AgentConnection(socket, hello, opts);
}
