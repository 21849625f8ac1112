/**
 * Output of running background execs on its way to the store: coalesced in memory and written at most every
 * `flushMs`, so a chatty command costs the store a few transactions a second rather than one per line. Per
 * exec the buffer holds at most the exec's store cap (older chunks beyond it are dropped here, as the store
 * would drop them): the daemon's memory stays bounded however fast a sandbox prints. Chunk offsets make
 * every dropped byte visible to pollers (exec-poll.ts).
 */
import type { ExecOutputChunk, Store } from '../ports.ts';

/** Chunks of one stream that follow each other are merged up to this size. */
const MERGE_MAX = 64 * 1024;

interface Pending {
  chunks: ExecOutputChunk[];
  bytes: number;
  cap: number;
}

export interface ExecOutputBuffer {
  /** Queues a chunk of a background exec (kept ≤ `cap` bytes per exec until written). */
  add(execId: string, chunk: ExecOutputChunk, cap: number): void;
  /** Writes an exec's queued output now (before reading it, and when it ends). */
  flush(execId: string): void;
  /** Writes everything now (daemon shutdown). */
  flushAll(): void;
  /** Bytes queued, all execs together. */
  pendingBytes(): number;
}

export function createExecOutputBuffer(deps: { store: Store; flushMs?: number }): ExecOutputBuffer {
  const { store } = deps;
  const flushMs = deps.flushMs ?? 200;
  const pending = new Map<string, Pending>();
  let timer: NodeJS.Timeout | null = null;

  function flushOne(execId: string): void {
    const p = pending.get(execId);
    if (!p) return;
    pending.delete(execId);
    try {
      store.atomically(() => {
        for (const c of p.chunks) store.appendExecOutput(execId, c, p.cap);
      });
    } catch {
      // the exec (or its sandbox) was removed meanwhile: its output goes with it
    }
  }

  function flushAll(): void {
    timer = null;
    for (const id of [...pending.keys()]) flushOne(id);
  }

  return {
    add(execId: string, chunk: ExecOutputChunk, cap: number): void {
      let p = pending.get(execId);
      if (!p) {
        p = { chunks: [], bytes: 0, cap };
        pending.set(execId, p);
      }
      const last = p.chunks[p.chunks.length - 1];
      const follows =
        last !== undefined &&
        last.stream === chunk.stream &&
        last.offset !== undefined &&
        chunk.offset === last.offset + last.data.length &&
        last.data.length + chunk.data.length <= MERGE_MAX;
      if (follows) last.data = Buffer.concat([last.data, chunk.data]);
      else p.chunks.push({ ...chunk });
      p.bytes += chunk.data.length;
      while (p.bytes > cap && p.chunks.length > 1) {
        const dropped = p.chunks.shift();
        p.bytes -= dropped?.data.length ?? 0;
      }
      timer ??= setTimeout(flushAll, flushMs);
      timer.unref?.();
    },

    flush: flushOne,

    flushAll(): void {
      if (timer) clearTimeout(timer);
      flushAll();
    },

    pendingBytes(): number {
      let n = 0;
      for (const p of pending.values()) n += p.bytes;
      return n;
    },
  };
}
