/**
 * Polling an exec's output: pages of the chunks the store holds after a cursor (`after_seq`), and an exact
 * account of what the poller cannot get from the store — bytes dropped from the daemon's bounded copy, or
 * skipped by the agent while the command flooded — with the spool file inside the sandbox that holds them.
 * Every chunk carries its offset in its stream; the poller's position at each cursor it was given is
 * remembered (bounded), so the gap before the first chunk of a poll is known too.
 */
import type { ExecRecord } from '../../domain/types.ts';
import type { ExecPollResult, MissedOutput } from '../api.ts';
import type { ExecOutputChunk, Store } from '../ports.ts';

/** The most bytes of output one poll returns (a page; the next poll continues from next_seq). */
export const POLL_PAGE_BYTES = 1024 * 1024;
const CURSORS_PER_EXEC = 16;
const EXECS_REMEMBERED = 1024;
const MAX_MISSED = 16;
export const SPOOL_DIR = '/tmp/.forkbox-output';

type Stream = 'stdout' | 'stderr';
type Positions = Record<Stream, number | null>;

export function spoolPath(execId: string, stream: Stream): string {
  return `${SPOOL_DIR}/${execId}.${stream}`;
}

export interface ExecPoller {
  /** A page (≤ `maxBytes`) of the chunks after `afterSeq`, the next cursor, and the output missed. */
  poll(exec: ExecRecord, afterSeq: number, maxBytes?: number): Omit<ExecPollResult, 'exec' | 'done'>;
  /** Drops the positions remembered for an exec's cursors. */
  forget(execId: string): void;
}

export function createExecPoller(deps: { store: Store }): ExecPoller {
  /** exec id → cursor (seq) → the poller's position in each stream after it. Insertion-ordered: LRU. */
  const cursors = new Map<string, Map<number, Positions>>();

  function remember(execId: string, seq: number, pos: Positions): void {
    let m = cursors.get(execId);
    if (m) cursors.delete(execId);
    else m = new Map();
    cursors.set(execId, m);
    m.set(seq, pos);
    if (m.size > CURSORS_PER_EXEC) m.delete(m.keys().next().value as number);
    if (cursors.size > EXECS_REMEMBERED) cursors.delete(cursors.keys().next().value as string);
  }

  function positionsAt(execId: string, afterSeq: number): Positions {
    if (afterSeq < 0) return { stdout: 0, stderr: 0 };
    return cursors.get(execId)?.get(afterSeq) ?? { stdout: null, stderr: null };
  }

  function fileOf(exec: ExecRecord, stream: Stream): string | null {
    if (exec.streams) return exec.streams[stream].file;
    return exec.state === 'running' ? spoolPath(exec.id, stream) : null;
  }

  /** Gaps before and between the chunks, per stream; returns the positions after the last chunks. */
  function gaps(exec: ExecRecord, chunks: ExecOutputChunk[], start: Positions, missed: MissedOutput[]) {
    const pos: Positions = { ...start };
    for (const c of chunks) {
      const at = pos[c.stream];
      if (c.offset !== undefined && c.offset > (at ?? -1)) {
        if (at !== null || missed.every((m) => m.stream !== c.stream)) {
          if (missed.length < MAX_MISSED) {
            missed.push({
              stream: c.stream,
              from: at,
              to: c.offset,
              bytes: at === null ? null : c.offset - at,
              file: fileOf(exec, c.stream),
            });
          } else {
            // Too many to list: widen the last one of this stream to cover the rest.
            const last = [...missed].reverse().find((m) => m.stream === c.stream);
            if (last) {
              last.to = c.offset;
              last.bytes = last.from === null ? null : last.to - last.from;
            }
          }
        }
      }
      if (c.offset !== undefined) pos[c.stream] = c.offset + c.data.length;
      else if (at !== null) pos[c.stream] = at + c.data.length;
    }
    // A first gap whose start is unknown is only a gap when something precedes the chunk.
    return pos;
  }

  return {
    poll(
      exec: ExecRecord,
      afterSeq: number,
      maxBytes = POLL_PAGE_BYTES,
    ): Omit<ExecPollResult, 'exec' | 'done'> {
      const chunks = deps.store.readExecOutput(exec.id, afterSeq, maxBytes);
      const missed: MissedOutput[] = [];
      const start = positionsAt(exec.id, afterSeq);
      const pos = gaps(exec, chunks, start, missed);
      const last = chunks[chunks.length - 1];
      const nextSeq = last ? last.seq : afterSeq;
      if (last) remember(exec.id, nextSeq, pos);
      return {
        chunks: chunks.map((c) => {
          const out: ExecPollResult['chunks'][number] = {
            seq: c.seq,
            stream: c.stream,
            data: c.data.toString('utf8'),
          };
          if (c.offset !== undefined) out.offset = c.offset;
          return out;
        }),
        nextSeq,
        // An unknown start with the stream's first chunk at offset 0 is no gap.
        missed: missed.filter((m) => m.from !== null || m.to > 0),
      };
    },

    forget(execId: string): void {
      cursors.delete(execId);
    },
  };
}
