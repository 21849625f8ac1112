import { z } from 'zod';
import type { RunOptions } from '../../../service/api.ts';
import { commandArgs, timeoutArg, toExecRequest } from '../kit/exec-args.ts';
import { streamsOut, streamsShape } from '../kit/shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../kit/tool-kit.ts';

const DEFAULT_TIMEOUT_S = 300;

/** Run options with progress from output chunks and from peeks (the latest bytes past the inline head). */
export function progressOptions(
  progress: (m: string) => void,
  signal: AbortSignal,
): RunOptions & { onPeek?: (p: { stream: string; totalBytes: number; data: Buffer }) => void } {
  return {
    // Cancelling the request (notifications/cancelled, a client timeout, a closed session) ends the
    // command's whole process tree, or interrupts the REPL code.
    signal,
    onOutput: (chunk) => progress(chunk.data.toString('utf8')),
    onPeek: (p) => progress(`[${p.stream}, ${p.totalBytes} bytes so far] …${p.data.toString('utf8')}`),
  };
}

export const execRun = defineTool({
  name: 'exec_run',
  title: 'Run command',
  description: `Run a command and wait (timeout_s, default ${DEFAULT_TIMEOUT_S}); lasting Python state: code_run. Returns exit_code, stdout, stderr; past max_output_bytes a stream keeps head and tail, all in streams.*.file. Cancel kills its tree; leftovers: processes still running (exec_cancel ends them). Past your client's timeout (often 60 s): exec_start + exec_poll.`,
  annotations: HINTS.run,
  bulk: ['stdout', 'stderr'],
  input: z.object({
    sandbox: sandboxArg,
    ...commandArgs,
    stdin: z
      .string()
      .max(8 * 1024 * 1024)
      .optional()
      .describe('Text fed to stdin, then closed'),
    timeout_s: timeoutArg(`default ${DEFAULT_TIMEOUT_S}`),
  }),
  output: z.object({
    exec_id: z.string(),
    exit_code: z.number().nullable(),
    signal: z.number().nullable(),
    stdout: z.string(),
    stderr: z.string(),
    truncated: z.boolean(),
    timed_out: z.boolean(),
    oom_killed: z.boolean(),
    cancelled: z.boolean(),
    duration_ms: z.number(),
    leftovers: z.number(),
    streams: streamsShape.optional(),
  }),
  async run(a, { api, sandbox, signal, progress, outputBytes }) {
    const id = await sandbox(a.sandbox);
    const req = toExecRequest(a, a.timeout_s ?? DEFAULT_TIMEOUT_S, outputBytes);
    const o = await api.exec(
      id,
      a.stdin === undefined ? req : { ...req, stdin: Buffer.from(a.stdin, 'utf8') },
      progressOptions(progress, signal),
    );
    return {
      structured: {
        exec_id: o.execId,
        exit_code: o.exitCode,
        signal: o.signal,
        stdout: o.stdout,
        stderr: o.stderr,
        truncated: o.truncated,
        timed_out: o.timedOut,
        oom_killed: o.oomKilled,
        cancelled: o.cancelled,
        duration_ms: o.durationMs,
        leftovers: o.leftovers,
        ...streamsOut(o.streams),
      },
    };
  },
});
