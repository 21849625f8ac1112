import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { ExecOutcome, ForkboxApi, RunOptions } from '../../../service/api.ts';
import { commandArgs, timeoutArg, toExecRequest } from '../exec-args.ts';
import { streamsOut, streamsShape } from '../shapes.ts';
import { defineTool, HINTS, sandboxArg, type ToolLog } from '../tool-kit.ts';

const DEFAULT_TIMEOUT_S = 300;

/**
 * Cancel the exec started under `key`. The sync exec call does not return its id until it ends, so the
 * exec is found by the idempotency key it was started with; it may not be recorded yet when the abort
 * comes very early, hence the retries. (The abort signal handed to api.exec cancels it too where the
 * API supports it; cancelling an ended exec changes nothing.)
 */
async function cancelByKey(api: ForkboxApi, sandbox: string, key: string, log: ToolLog): Promise<void> {
  for (let i = 0; i < 50; i++) {
    try {
      const found = (await api.listExecs(sandbox)).find((e) => e.idempotencyKey === key);
      if (found) {
        if (found.state === 'running') await api.cancelExec(sandbox, found.id);
        return;
      }
    } catch (e) {
      log.warn({ err: (e as Error).message, sandbox }, 'exec_run: cancelling after abort failed');
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Run options with progress from output chunks and from peeks (the latest bytes past the inline head). */
export function progressOptions(
  progress: (m: string) => void,
  signal: AbortSignal,
): RunOptions & { onPeek?: (p: { stream: string; data: Buffer }) => void } {
  return {
    signal,
    onOutput: (chunk) => progress(chunk.data.toString('utf8')),
    onPeek: (p) => progress(p.data.toString('utf8')),
  };
}

export const execRun = defineTool({
  name: 'exec_run',
  title: 'Run a command',
  description: `Run a command and wait (timeout_s, default ${DEFAULT_TIMEOUT_S}); for Python with lasting state use code_run. Returns exit_code, stdout, stderr: a stream over max_output_bytes keeps head and tail, whole in its streams[].file (read with file_read). Progress is sent while it runs; cancel kills its process tree. Work longer than your client's timeout (often 60 s): exec_start + exec_poll.`,
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
    streams: streamsShape.optional(),
  }),
  async run(a, { api, sandbox, signal, progress, log, outputBytes }) {
    const id = await sandbox(a.sandbox);
    const key = `mcp-${randomUUID()}`;
    const req = { ...toExecRequest(a, a.timeout_s ?? DEFAULT_TIMEOUT_S, outputBytes), idempotencyKey: key };
    const running: Promise<ExecOutcome> = api.exec(
      id,
      a.stdin === undefined ? req : { ...req, stdin: Buffer.from(a.stdin, 'utf8') },
      progressOptions(progress, signal),
    );
    const onAbort = () => void cancelByKey(api, id, key, log);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    try {
      const o = await running;
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
          ...streamsOut(o.streams),
        },
      };
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  },
});
