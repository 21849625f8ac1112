import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';
import { boundedNumber } from '../../bounds.ts';
import { execOut, execShape } from '../shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../tool-kit.ts';

export const execPoll = defineTool({
  name: 'exec_poll',
  title: 'Read background command output',
  description:
    'Get the state of a background command and its output chunks after `after_seq` (start at -1; pass back next_seq). With wait_ms, waits up to that long for new output or the end. done=true once it has ended; exit_code is then set. Output you did not get (it came faster than you polled) is listed in `missed` with the file in the sandbox and the byte range to read with file_read.',
  annotations: HINTS.read,
  input: z.object({
    sandbox: sandboxArg,
    exec_id: z.string().min(1).max(64),
    after_seq: boundedNumber(LIMITS.afterSeq)
      .optional()
      .describe('Return chunks with seq > after_seq (default -1: all kept).'),
    wait_ms: boundedNumber(LIMITS.pollWaitMs)
      .optional()
      .describe('Long-poll: wait this long for news (default 0).'),
  }),
  output: z.object({
    exec: execShape,
    chunks: z.array(
      z.object({
        seq: z.number(),
        stream: z.enum(['stdout', 'stderr']),
        data: z.string(),
        offset: z.number().optional(),
      }),
    ),
    next_seq: z.number(),
    done: z.boolean(),
    missed: z.array(
      z.object({
        stream: z.enum(['stdout', 'stderr']),
        from: z.number().nullable(),
        to: z.number(),
        bytes: z.number().nullable(),
        file: z.string().nullable(),
      }),
    ),
  }),
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    const opts: { afterSeq?: number; waitMs?: number } = {};
    if (a.after_seq !== undefined) opts.afterSeq = a.after_seq;
    if (a.wait_ms !== undefined) opts.waitMs = a.wait_ms;
    const r = await api.pollExec(id, a.exec_id, opts);
    return {
      structured: {
        exec: execOut(r.exec),
        chunks: r.chunks,
        next_seq: r.nextSeq,
        done: r.done,
        missed: r.missed,
      },
    };
  },
});
