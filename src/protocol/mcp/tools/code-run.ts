import { z } from 'zod';
import { LIMITS, SIZES } from '../../../domain/limits.ts';
import type { CodeRunRequest } from '../../../service/api.ts';
import { boundedNumber } from '../../bounds.ts';
import { defineTool, type ExtraContent, HINTS, sandboxArg } from '../tool-kit.ts';

const DEFAULT_TIMEOUT_S = 300;
/** A progress message carries at most this much of the output (its latest bytes). */
const PROGRESS_TEXT_BYTES = 4096;

function progressText(data: Buffer): string {
  return data.subarray(Math.max(0, data.length - PROGRESS_TEXT_BYTES)).toString('utf8');
}

export const codeRun = defineTool({
  name: 'code_run',
  title: 'Run code',
  description: `Run code in a sandbox. python (default) runs in the sandbox's persistent REPL: variables, imports and open files stay across calls, and the value of a trailing expression is returned in \`value\`; matplotlib figures come back as image content. node and bash run as a fresh process each time. On an exception, ok=false and \`error\` has type, message and traceback (state is kept). Interrupted after timeout_s (default ${DEFAULT_TIMEOUT_S}); output kept up to max_output_bytes. code_reset clears the Python state.`,
  annotations: HINTS.run,
  input: z.object({
    sandbox: sandboxArg,
    code: z.string().min(1).max(SIZES.codeChars),
    language: z.enum(['python', 'node', 'bash']).optional().describe('Default python.'),
    timeout_s: boundedNumber(LIMITS.timeoutSeconds).optional(),
    max_output_bytes: boundedNumber(LIMITS.maxOutputBytes).optional(),
  }),
  output: z.object({
    ok: z.boolean(),
    value: z.string().nullable(),
    stdout: z.string(),
    stderr: z.string(),
    error: z.object({ type: z.string(), message: z.string(), traceback: z.string() }).nullable(),
    timed_out: z.boolean(),
    interrupted: z.boolean(),
    restarted: z.boolean(),
    truncated: z.boolean(),
    oom_killed: z.boolean(),
    images: z.number().describe('How many image content blocks follow.'),
    duration_ms: z.number(),
  }),
  async run(a, { api, sandbox, signal, progress }) {
    const id = await sandbox(a.sandbox);
    const req: CodeRunRequest = { code: a.code, timeoutSeconds: a.timeout_s ?? DEFAULT_TIMEOUT_S };
    if (a.language !== undefined) req.language = a.language;
    if (a.max_output_bytes !== undefined) req.maxOutputBytes = a.max_output_bytes;
    // Cancelling the request (notifications/cancelled, the client's own timeout, a closed session)
    // interrupts the code; output goes out as progress while it runs.
    const r = await api.runCode(id, req, {
      signal,
      onOutput: (chunk) => progress(progressText(chunk.data)),
      onPeek: (p) => progress(progressText(p.data)),
    });
    const extra: ExtraContent[] = r.images.map((img) => ({
      type: 'image',
      data: img.dataB64,
      mimeType: img.mime,
    }));
    return {
      structured: {
        ok: r.ok,
        value: r.value,
        stdout: r.stdout,
        stderr: r.stderr,
        error: r.error,
        timed_out: r.timedOut,
        interrupted: r.interrupted,
        restarted: r.restarted,
        truncated: r.truncated,
        oom_killed: r.oomKilled,
        images: extra.length,
        duration_ms: r.durationMs,
      },
      extra,
    };
  },
});
