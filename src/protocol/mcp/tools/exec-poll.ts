import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';
import type { ExecPollResult } from '../../../service/api.ts';
import { boundedNumber } from '../../bounds.ts';
import { execOut, execStatusShape } from '../kit/shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../kit/tool-kit.ts';

/** Longest long-poll: well under the usual 60 s client request timeout, so the poll never loses the race. */
export const MAX_POLL_WAIT_MS = LIMITS.mcpPollWaitMs.max;

const missedShape = z.object({
  stream: z.enum(['stdout', 'stderr']),
  from: z.number().nullable(),
  to: z.number(),
  bytes: z.number().nullable(),
  file: z.string().nullable(),
});

type Chunk = ExecPollResult['chunks'][number];

/** The chunks that fit in `budget` bytes (at least one), in order. */
function page(chunks: Chunk[], budget: number): Chunk[] {
  const out: Chunk[] = [];
  let used = 0;
  for (const c of chunks) {
    const n = Buffer.byteLength(c.data, 'utf8');
    if (out.length > 0 && used + n > budget) break;
    out.push(c);
    used += n;
  }
  return out;
}

export const execPoll = defineTool({
  name: 'exec_poll',
  title: 'Poll command',
  description: `A background command's state and output after after_seq (-1 first, then next_seq), ≤max_bytes. wait_ms (max ${MAX_POLL_WAIT_MS}) waits for news; poll until done. more: output waiting. missed: output not returned, and its file.`,
  annotations: HINTS.read,
  bulk: ['stdout', 'stderr'],
  input: z.object({
    sandbox: sandboxArg,
    exec_id: z.string().min(1).max(64).describe('From exec_start'),
    after_seq: boundedNumber(LIMITS.afterSeq).optional().describe("Last poll's next_seq (default -1)"),
    wait_ms: boundedNumber(LIMITS.mcpPollWaitMs).optional().describe('Long-poll time (default 0)'),
    max_bytes: boundedNumber(LIMITS.mcpOutputBytes)
      .min(1)
      .optional()
      .describe('Bytes at most (default 2x inline)'),
  }),
  output: z.object({
    exec: execStatusShape,
    stdout: z.string(),
    stderr: z.string(),
    next_seq: z.number(),
    done: z.boolean(),
    more: z.boolean(),
    missed: z.array(missedShape).optional(),
  }),
  async run(a, { api, sandbox, outputBytes }) {
    const id = await sandbox(a.sandbox);
    const opts: { afterSeq?: number; waitMs?: number } = {};
    if (a.after_seq !== undefined) opts.afterSeq = a.after_seq;
    if (a.wait_ms !== undefined) opts.waitMs = a.wait_ms;
    const r = await api.pollExec(id, a.exec_id, opts);
    const shown = page(r.chunks, a.max_bytes ?? 2 * outputBytes);
    const more = shown.length < r.chunks.length;
    const last = shown[shown.length - 1];
    const text = (s: 'stdout' | 'stderr') =>
      shown
        .filter((c) => c.stream === s)
        .map((c) => c.data)
        .join('');
    const missed = r.missed;
    return {
      structured: {
        exec: (({ state, exit_code, signal, timed_out, oom_killed, leftovers }) => ({
          state,
          exit_code,
          signal,
          timed_out,
          oom_killed,
          leftovers,
        }))(execOut(r.exec)),
        stdout: text('stdout'),
        stderr: text('stderr'),
        next_seq: more && last ? last.seq : r.nextSeq,
        done: r.done && !more,
        more,
        ...(missed && missed.length > 0 ? { missed } : {}),
      },
    };
  },
});
