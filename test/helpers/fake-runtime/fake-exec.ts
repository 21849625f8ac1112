/**
 * One exec in a fake sandbox: runs a program of the fake shell with the contract of Runtime.exec —
 * output streamed as numbered chunks and capped at max_output_bytes (stdout and stderr together, a
 * marker after the cut), stdin fed through writeStdin, and an end by timeout, cancel or signal that
 * reports how it ended.
 */
import { ForkboxError } from '../../../src/domain/errors.ts';
import type { ExecEvents, ExecHandle, ExecResult, ExecSpec } from '../../../src/service/ports.ts';
import type { FakeFs } from './fake-fs.ts';
import { KILLED, notFound, type ProcessIo, type Program } from './fake-shell.ts';

const DEFAULT_CAP = 1024 * 1024;

export function truncationMarker(cap: number): string {
  return `\n[forkbox: output truncated after ${cap} bytes; raise max_output_bytes or write the output to a file]\n`;
}

export interface FakeProcessHost {
  fs: FakeFs;
  env: Record<string, string>;
  programs: Map<string, Program>;
  nextPid(): number;
  /** Fails when the sandbox is gone; the running exec then rejects with that error. */
  gone(): ForkboxError | null;
  crash(reason: string): void;
  /** Every running exec registers its kill, so killing the sandbox ends it. */
  track(kill: (err: ForkboxError) => void): () => void;
}

export function startFakeExec(host: FakeProcessHost, spec: ExecSpec, events?: ExecEvents): ExecHandle {
  const cap = spec.maxOutputBytes ?? DEFAULT_CAP;
  const killer = new AbortController();
  type Ending = { how: 'timedOut' | 'cancelled' | 'signal' | 'gone'; signal: number; err?: ForkboxError };
  const state: { ended: Ending | null } = { ended: null };
  const stdinChunks: Buffer[] = [];
  let stdinClosed = spec.stdin !== true;
  let stdinWaiter: (() => void) | null = null;
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let kept = 0;
  let truncated = false;
  let seq = 0;

  const kill = (how: Ending['how'], signal: number, e?: ForkboxError) => {
    if (state.ended) return;
    state.ended = { how, signal, ...(e ? { err: e } : {}) };
    killer.abort();
  };
  const untrack = host.track((e) => kill('gone', 9, e));
  const aborted = () =>
    new Promise<never>((_, reject) => {
      if (killer.signal.aborted) reject(KILLED);
      killer.signal.addEventListener('abort', () => reject(KILLED), { once: true });
    });
  const emit = (stream: 'stdout' | 'stderr', data: string | Buffer) => {
    if (killer.signal.aborted) return;
    let buf = Buffer.from(data);
    if (kept + buf.length > cap) {
      buf = buf.subarray(0, Math.max(0, cap - kept));
      truncated = true;
    }
    if (buf.length === 0) return;
    kept += buf.length;
    (stream === 'stdout' ? out : err).push(buf);
    events?.onOutput?.({ seq: seq++, stream, data: buf });
  };

  const result = (async (): Promise<ExecResult> => {
    const t0 = performance.now();
    await Promise.resolve();
    const gone = host.gone();
    if (gone) throw gone;
    const argv = spec.argv ?? ['/bin/sh', '-c', spec.cmd ?? ''];
    const prog = host.programs.get(argv[0] ?? '');
    if (!prog) throw notFound(argv[0] ?? '');
    if (spec.cwd !== undefined && host.fs.get(spec.cwd)?.kind !== 'dir') throw notFound(spec.cwd);
    events?.onStarted?.(host.nextPid());
    const timer =
      spec.timeoutMs !== undefined && spec.timeoutMs > 0
        ? setTimeout(() => kill('timedOut', 9), spec.timeoutMs)
        : null;
    const io: ProcessIo = {
      argv,
      env: { ...host.env, ...(spec.env ?? {}) },
      cwd: spec.cwd ?? '/',
      fs: host.fs,
      out: (d) => emit('stdout', d),
      err: (d) => emit('stderr', d),
      readStdin: () =>
        Promise.race([
          (async () => {
            while (!stdinClosed) await new Promise<void>((r) => (stdinWaiter = r));
            return Buffer.concat(stdinChunks.splice(0));
          })(),
          aborted(),
        ]),
      readStdinChunk: () =>
        Promise.race([
          (async () => {
            while (stdinChunks.length === 0 && !stdinClosed)
              await new Promise<void>((r) => (stdinWaiter = r));
            return stdinChunks.length > 0 ? Buffer.concat(stdinChunks.splice(0)) : null;
          })(),
          aborted(),
        ]),
      sleep: (ms) =>
        Promise.race([
          new Promise<void>((r) => {
            if (Number.isFinite(ms)) setTimeout(r, ms).unref();
          }),
          aborted(),
        ]),
      crashSandbox: (reason) => host.crash(reason),
    };
    let exitCode: number | null = null;
    try {
      exitCode = await Promise.race([Promise.resolve(prog(io)), aborted()]);
    } catch (e) {
      if (e !== KILLED) throw e;
    } finally {
      if (timer) clearTimeout(timer);
      untrack();
    }
    const end = state.ended;
    if (end?.how === 'gone') throw end.err;
    let stdout = Buffer.concat(out);
    if (truncated) stdout = Buffer.concat([stdout, Buffer.from(truncationMarker(cap))]);
    return {
      exitCode: end ? null : exitCode,
      signal: end ? end.signal : null,
      timedOut: end?.how === 'timedOut',
      cancelled: end?.how === 'cancelled',
      truncated,
      oomKilled: false,
      durationMs: performance.now() - t0,
      stdout,
      stderr: Buffer.concat(err),
      // A fake program leaves no processes behind: nothing outlives its end.
      leftovers: 0,
      tree: null,
    };
  })();
  result.catch(() => untrack());

  return {
    result,
    async writeStdin(data, eof = false) {
      if (stdinClosed)
        throw new ForkboxError('not_found', 'the exec has no open stdin', { agentCode: 'not_found' });
      stdinChunks.push(Buffer.from(data));
      if (eof) stdinClosed = true;
      stdinWaiter?.();
    },
    async signal(sig) {
      kill('signal', sig);
    },
    async resize() {
      // A fake program has no terminal to size; an exec asked without one has none at all.
      if (!spec.tty)
        throw new ForkboxError('not_found', 'the exec has no terminal', { agentCode: 'not_found' });
    },
    cancel() {
      kill('cancelled', 9);
    },
  };
}
