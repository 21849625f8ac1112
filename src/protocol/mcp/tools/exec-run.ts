import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';
import type { ExecOutcome, ForkboxApi } from '../../../service/api.ts';
import { boundedNumber } from '../../bounds.ts';
import { commandArgs, toExecRequest } from '../exec-args.ts';
import { defineTool, HINTS, sandboxArg, type ToolLog } from '../tool-kit.ts';

const DEFAULT_TIMEOUT_S = 300;

/**
 * Cancel the exec started under `key`. The sync exec call does not return its id until it ends, so the
 * exec is found by the idempotency key it was started with; it may not be recorded yet when the abort
 * comes very early, hence the retries.
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

export const execRun = defineTool({
  name: 'exec_run',
  title: 'Run a command',
  description: `Run a command in a sandbox and wait for it: returns exit_code, stdout, stderr, duration_ms and flags (truncated, timed_out, oom_killed). Give \`command\` (a /bin/sh -c line) or \`argv\`. Killed after timeout_s (default ${DEFAULT_TIMEOUT_S}); output is kept up to max_output_bytes per stream. With a progressToken, output streams as progress notifications; cancelling the request kills the command and its process group. Files and processes it leaves persist in the sandbox. For longer jobs use exec_start + exec_poll.`,
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
  }),
  async run(a, { api, sandbox, signal, progress, log }) {
    const id = await sandbox(a.sandbox);
    const key = `mcp-${randomUUID()}`;
    const req = { ...toExecRequest(a, a.timeout_s ?? DEFAULT_TIMEOUT_S), idempotencyKey: key };
    const running: Promise<ExecOutcome> = api.exec(
      id,
      a.stdin === undefined ? req : { ...req, stdin: Buffer.from(a.stdin, 'utf8') },
      { onOutput: (chunk) => progress(chunk.data.toString('utf8')) },
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
        },
      };
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  },
});
