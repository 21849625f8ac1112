/**
 * One output stream of an exec or a REPL call as the agent reports it (docs/AGENT-PROTOCOL.md, "Output
 * of exec and repl.eval"): the head arrives as events, the tail just before the result, the totals and
 * the spool file in the result. Assembled here into the inline text (head, a marker line, tail) and a
 * StreamSummary.
 */
import { AGENT_BOUNDS } from '../../../domain/limits.ts';
import type { StreamSummary } from '../../../service/ports.ts';

export type StreamName = 'stdout' | 'stderr';

/** The tail part of a per-stream inline budget (the head part is the rest). */
export function tailBudget(maxOutputBytes: number): number {
  return Math.min(Math.floor(maxOutputBytes / 4), AGENT_BOUNDS.tailBytes);
}

/**
 * The line put between the head and the tail when the middle of a stream was left out. It says exactly
 * what can still be read: the spool file holds the stream's first `spooled` bytes (offset = position in
 * the stream), and the tail shown after the line is its last `tail` bytes; whatever lies between the two
 * was not kept when the spool file reached its cap.
 */
export function omissionMarker(
  stream: StreamName,
  omitted: number,
  file: string | null,
  kept: { total: number; spooled: number; tail: number },
): string {
  const lostFrom = kept.spooled;
  const lostTo = kept.total - kept.tail;
  let where: string;
  if (!file) {
    where = 'it was not kept (no spool file: raise max_output_bytes, or write the output to a file yourself)';
  } else if (lostFrom >= lostTo) {
    where = `the whole ${stream} is in ${file} inside the sandbox (read it in pages)`;
  } else {
    where =
      `bytes 0-${lostFrom} of ${stream} are in ${file} inside the sandbox (read it in pages); ` +
      `bytes ${lostFrom}-${lostTo} were not kept (the spool file's cap, spool_bytes: raise it, or write ` +
      `the output to a file yourself); the last ${kept.tail} bytes follow`;
  }
  return `\n[forkbox: ${omitted} bytes of ${stream} omitted here; ${where}]\n`;
}

/**
 * Collects one stream's head and tail bytes as the events arrive. With a budget (the call's
 * max_output_bytes), it keeps at most the head part and the tail part of it whatever the agent sends: the
 * agent is untrusted, and every buffer on the way stays bounded.
 */
export class StreamCollector {
  readonly #head: Buffer[] = [];
  readonly #tail: Buffer[] = [];
  readonly #headMax: number;
  readonly #tailMax: number;
  #headBytes = 0;
  #tailBytes = 0;
  #forwarded = 0;

  constructor(
    readonly stream: StreamName,
    budget = Number.POSITIVE_INFINITY,
  ) {
    this.#tailMax = Number.isFinite(budget) ? tailBudget(budget) : Number.POSITIVE_INFINITY;
    this.#headMax = Number.isFinite(budget) ? budget - this.#tailMax : Number.POSITIVE_INFINITY;
  }

  /** Head bytes (forwarded as they came); returns what was kept of them (empty past the budget). */
  addHead(data: Buffer): Buffer {
    const kept = data.subarray(0, Math.max(0, this.#headMax - this.#headBytes));
    if (kept.length > 0) {
      this.#head.push(kept);
      this.#headBytes += kept.length;
    }
    return kept;
  }

  /** Tail bytes (sent just before the result); returns what was kept of them. */
  addTail(data: Buffer): Buffer {
    const kept = data.subarray(0, Math.max(0, this.#tailMax - this.#tailBytes));
    if (kept.length > 0) {
      this.#tail.push(kept);
      this.#tailBytes += kept.length;
    }
    return kept;
  }

  /** Bytes forwarded in mode 'latest' (they go to their reader, not into the inline result). */
  addForwarded(n: number): void {
    this.#forwarded += n;
  }

  get shownBytes(): number {
    return this.#headBytes + this.#tailBytes;
  }

  /**
   * The inline bytes and the summary, from the result's `<stream>_total`, `_file` and `_spooled` fields
   * (absent from an older agent: the shown bytes are then the whole stream).
   */
  finish(result: Record<string, unknown>): {
    /** The inline stream: head, the marker line when the middle was left out, tail. */
    data: Buffer;
    marker: Buffer | null;
    tail: Buffer;
    summary: StreamSummary;
  } {
    const num = (k: string): number | null => {
      const v = result[`${this.stream}_${k}`];
      return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null;
    };
    const shown = this.shownBytes + this.#forwarded;
    // The agent is untrusted: a total below what it sent is treated as the sent amount.
    const total = Math.max(num('total') ?? shown, shown);
    const fileField = result[`${this.stream}_file`];
    const file = typeof fileField === 'string' && fileField.startsWith('/') ? fileField.slice(0, 4096) : null;
    const omitted = total - shown;
    const named = omitted > 0 || this.#forwarded > 0 ? file : null;
    const spooled = named === null ? 0 : Math.min(num('spooled') ?? 0, total);
    const kept = { total, spooled, tail: this.#tailBytes };
    const marker =
      omitted > 0 && this.#forwarded === 0
        ? Buffer.from(omissionMarker(this.stream, omitted, named, kept))
        : null;
    return {
      data: Buffer.concat([...this.#head, ...(marker ? [marker] : []), ...this.#tail]),
      marker,
      tail: Buffer.concat(this.#tail),
      summary: {
        totalBytes: total,
        shownBytes: shown,
        omittedBytes: omitted,
        file: named,
        spooledBytes: spooled,
      },
    };
  }
}
