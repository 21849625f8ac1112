import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { devbenchErrorText } from './errors.ts';
import { parseExecId } from './ids.ts';
import { inputData } from './shapes.ts';

/**
 * DevBench's sequence-numbered messages over forkbox's poll. DevBench numbered chunks from 0 but
 * returned only `seq > after_seq`, so with its default after_seq 0 the first chunk was never seen;
 * forkbox numbers them from 1 (forkbox's seq + 1), so the default returns everything. The completion
 * message (exit_code, usage {wall_ms, timeout?}) comes after the last output, once all of it was
 * returned. A poll returns at most twice the inline output bound; `complete` stays false until the rest
 * is polled. Messages carry every field, null when unset, as pydantic dumped them; `ts` is null (forkbox
 * does not time chunks).
 */
export const execPoll = compatTool(
  {
    name: 'exec_poll',
    title: 'Poll exec',
    description:
      'Poll for execution output and status: messages after after_seq, and whether it is complete.',
    annotations: HINTS.read,
    input: inputData({
      exec_id: z.string().min(1).max(140).describe('Execution ID to poll'),
      after_seq: z.number().int().min(0).default(0).describe('Return messages after this sequence number'),
    }),
    async run({ input_data: a }, { api, outputBytes }) {
      const id = parseExecId(a.exec_id);
      const r = await api.pollExec(id.sandbox, id.exec, { afterSeq: a.after_seq - 1 });
      const budget = 2 * outputBytes;
      const messages: Record<string, unknown>[] = [];
      let used = 0;
      for (const c of r.chunks) {
        const n = Buffer.byteLength(c.data, 'utf8');
        if (messages.length > 0 && used + n > budget) break;
        used += n;
        messages.push({
          seq: c.seq + 1,
          stream: c.stream,
          data: c.data,
          ts: null,
          exit_code: null,
          usage: null,
          complete: false,
        });
      }
      const complete = r.done && messages.length === r.chunks.length;
      const endSeq = r.nextSeq + 2;
      if (complete && endSeq > a.after_seq) {
        const e = r.exec;
        messages.push({
          seq: endSeq,
          stream: null,
          data: null,
          ts: null,
          exit_code: e.exitCode ?? -1,
          usage: {
            wall_ms: Math.max(0, (e.endedAt ?? e.startedAt) - e.startedAt),
            ...(e.timedOut ? { timeout: true } : {}),
          },
          complete: true,
        });
      }
      return { messages, complete };
    },
  },
  devbenchErrorText,
);
