import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';
import { boundedNumber } from '../../bounds.ts';
import { commandArgs, toExecRequest } from '../exec-args.ts';
import { streamOut, streamShape } from '../shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../tool-kit.ts';

const DEFAULT_TIMEOUT_S = 300;

export const execRun = defineTool({
  name: 'exec_run',
  title: 'Run a command',
  description: `Run a command in a sandbox and wait for it: returns exit_code, stdout, stderr, duration_ms and flags (truncated, timed_out, oom_killed). Give \`command\` (a /bin/sh -c line) or \`argv\`. Killed after timeout_s (default ${DEFAULT_TIMEOUT_S}) with every process it started. Each stream returns its start and end within max_output_bytes; the whole stream is then in a file in the sandbox (\`streams\`). With a progressToken, output streams as progress notifications; cancelling the request kills the command and every process it started. Files persist; processes it left running (\`server &\`) persist and are counted in \`leftovers\` (exec_cancel ends them). For longer jobs use exec_start + exec_poll.`,
  annotations: HINTS.run,
  input: z.object({
    sandbox: sandboxArg,
    ...commandArgs,
    stdin: z
      .string()
      .max(8 * 1024 * 1024)
      .optional()
      .describe('Text written to the command’s stdin, then closed.'),
    timeout_s: boundedNumber(LIMITS.timeoutSeconds)
      .optional()
      .describe(`Kill the command after this many seconds (default ${DEFAULT_TIMEOUT_S}).`),
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
    streams: z.object({ stdout: streamShape, stderr: streamShape }).optional(),
  }),
  async run(a, { api, sandbox, signal, progress }) {
    const id = await sandbox(a.sandbox);
    const req = toExecRequest(a, a.timeout_s ?? DEFAULT_TIMEOUT_S);
    // Cancelling the request (notifications/cancelled, a client timeout) ends the command's whole tree.
    const o = await api.exec(
      id,
      a.stdin === undefined ? req : { ...req, stdin: Buffer.from(a.stdin, 'utf8') },
      {
        signal,
        onOutput: (chunk) => progress(chunk.data.toString('utf8')),
        onPeek: (p) => progress(`[${p.stream}, ${p.totalBytes} bytes so far] …${p.data.toString('utf8')}`),
      },
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
        ...(o.streams
          ? { streams: { stdout: streamOut(o.streams.stdout), stderr: streamOut(o.streams.stderr) } }
          : {}),
      },
    };
  },
});
