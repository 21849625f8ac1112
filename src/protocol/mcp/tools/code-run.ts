import { z } from 'zod';
import { LIMITS, SIZES } from '../../../domain/limits.ts';
import type { CodeRunRequest } from '../../../service/api.ts';
import { boundedNumber } from '../../bounds.ts';
import { maxOutputArg } from '../kit/exec-args.ts';
import { streamsOut, streamsShape } from '../kit/shapes.ts';
import { defineTool, type ExtraContent, HINTS, sandboxArg } from '../kit/tool-kit.ts';
import { cutMiddle } from '../kit/tool-result.ts';
import { progressOptions } from './exec-run.ts';

const DEFAULT_TIMEOUT_S = 300;

export const codeRun = defineTool({
  name: 'code_run',
  title: 'Run code',
  description: `Run code in the sandbox's persistent Python or Node REPL (code_reset clears state). Returns last value, stdout, stderr (cut as exec_run), figures; exception: ok=false, state kept. bash: one-off run. Interrupted at timeout_s (default ${DEFAULT_TIMEOUT_S})/cancel; restarted=true: state lost (forks restart Node).`,
  annotations: HINTS.run,
  bulk: ['stdout', 'stderr'],
  input: z.object({
    sandbox: sandboxArg,
    code: z.string().min(1).max(SIZES.codeChars).describe('Source code'),
    language: z.enum(['python', 'node', 'nodejs', 'bash']).optional().describe('Default python'),
    timeout_s: boundedNumber(LIMITS.timeoutSeconds)
      .optional()
      .describe(`Seconds before an interrupt (default ${DEFAULT_TIMEOUT_S})`),
    max_output_bytes: maxOutputArg,
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
    images: z.number(),
    duration_ms: z.number(),
    streams: streamsShape.optional(),
  }),
  async run(a, { api, sandbox, signal, progress, outputBytes }) {
    const id = await sandbox(a.sandbox);
    const max = a.max_output_bytes ?? outputBytes;
    const req: CodeRunRequest = {
      code: a.code,
      timeoutSeconds: a.timeout_s ?? DEFAULT_TIMEOUT_S,
      maxOutputBytes: max,
    };
    if (a.language !== undefined) req.language = a.language;
    const r = await api.runCode(id, req, progressOptions(progress, signal));
    const extra: ExtraContent[] = r.images.map((img) => ({
      type: 'image',
      data: img.dataB64,
      mimeType: img.mime,
    }));
    return {
      structured: {
        ok: r.ok,
        value: r.value === null ? null : cutMiddle(r.value, max, 'from the value'),
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
        ...streamsOut(r.streams),
      },
      extra,
    };
  },
});
