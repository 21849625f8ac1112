/** The exec and code part of the API for one caller. */
import { ForkboxError } from '../../domain/errors.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { CodeRunRequest, ExecApi, ExecOutcome, RunOptions } from '../api.ts';
import type { CallerContext } from '../caller.ts';
import type { EngineParts } from '../engine-parts.ts';
import type { ReplEvalOptions, ReplResult } from '../ports.ts';
import { checkRunBounds } from '../validate.ts';

/** A bash snippet runs as a fresh process; its outcome in the shape of a REPL result. */
function asReplResult(argv0: string, o: ExecOutcome): ReplResult {
  const failed = o.exitCode !== 0;
  return {
    ok: !failed,
    value: null,
    stdout: o.stdout,
    stderr: o.stderr,
    error: failed
      ? {
          type: o.timedOut ? 'Timeout' : 'ExitStatus',
          message:
            o.exitCode === 127
              ? `${argv0} is not installed in this sandbox's image`
              : `exited with ${o.exitCode ?? `signal ${o.signal}`}`,
          traceback: '',
        }
      : null,
    timedOut: o.timedOut,
    interrupted: false,
    restarted: false,
    truncated: o.truncated,
    oomKilled: o.oomKilled,
    images: [],
    durationMs: o.durationMs,
    ...(o.streams ? { streams: o.streams } : {}),
  };
}

/** `code_run` in Python on an image without python3: the agent's runtime never runs user code. */
function noPythonCheck(p: EngineParts, rec: SandboxRecord): void {
  if (p.images.get(rec.image)?.python !== null) return;
  throw new ForkboxError(
    'requirement_missing',
    `sandbox ${rec.id}'s image '${rec.image}' has no python3, so it has no Python REPL (forkbox's own agent Python is not for user code). Run commands with exec_run ('forkbox exec'), or create the sandbox from an image with python3.`,
    { sandbox: rec.id, image: rec.image },
  );
}

export function execApi(p: EngineParts, ctx: CallerContext): ExecApi {
  const { execs, runtime } = p;
  const find = (idOrName: string) => p.find(ctx, idOrName);
  const running = (idOrName: string) => p.running(ctx, idOrName);
  return {
    exec: async (idOrName, req, opts?: RunOptions) => {
      // Nothing can type into a synchronous exec: a command reading its terminal would wait for its timeout.
      if (req.tty !== undefined)
        throw new ForkboxError(
          'invalid_argument',
          'tty is for background execs: start one with startExec (POST /v1/sandboxes/{id}/execs) and type into its stdin.',
        );
      return execs.run(running(idOrName), req, opts);
    },
    startExec: async (idOrName, req) => execs.start(running(idOrName), req),
    pollExec: async (idOrName, execId, opts) =>
      execs.poll(find(idOrName), execId, opts?.afterSeq ?? -1, opts?.waitMs ?? 0),
    writeExecStdin: async (idOrName, execId, data, eof) =>
      execs.writeStdin(running(idOrName), execId, data, eof ?? false),
    resizeExec: async (idOrName, execId, size) => execs.resize(running(idOrName), execId, size),
    cancelExec: async (idOrName, execId) => execs.cancel(find(idOrName), execId),
    listExecs: async (idOrName) => execs.list(find(idOrName)),

    async runCode(idOrName, req: CodeRunRequest, opts?: RunOptions): Promise<ReplResult> {
      checkRunBounds(req);
      const rec = running(idOrName);
      const language = req.language ?? 'python';
      const timeoutMs = Math.round((req.timeoutSeconds ?? 0) * 1000);
      if (language !== 'bash') {
        if (language === 'python') noPythonCheck(p, rec);
        const o: ReplEvalOptions = { timeoutMs };
        if (language === 'node' || language === 'nodejs') o.language = 'node';
        if (req.maxOutputBytes !== undefined) o.maxOutputBytes = req.maxOutputBytes;
        if (opts?.onOutput) o.onOutput = opts.onOutput;
        if (opts?.onPeek) o.onPeek = opts.onPeek;
        if (opts?.signal) o.signal = opts.signal;
        return runtime.replEval(rec, req.code, o);
      }
      const argv = ['bash', '-c', req.code];
      const o = await execs.run(
        rec,
        {
          argv,
          ...(req.timeoutSeconds === undefined ? {} : { timeoutSeconds: req.timeoutSeconds }),
          ...(req.maxOutputBytes === undefined ? {} : { maxOutputBytes: req.maxOutputBytes }),
        },
        opts,
      );
      return asReplResult('bash', o);
    },

    async resetCode(idOrName) {
      await runtime.replRestart(running(idOrName));
    },
  };
}
