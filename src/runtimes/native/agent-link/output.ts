/**
 * One output stream of an exec or a REPL call as the agent reports it (docs/AGENT-PROTOCOL.md, "Output
 * of exec and repl.eval"): the head arrives as events, the tail just before the result, the totals and
 * the spool file in the result. Assembled here into the inline text (head, a marker line, tail) and a
 * StreamSummary.
 */
import type { StreamSummary } from '../../../service/ports.ts';

export type StreamName = 'stdout' | 'stderr';

/** The tail part of a per-stream inline budget (the head part is the rest). */
export function tailBudget(maxOutputBytes: number): number {
  return Math.min(Math.floor(maxOutputBytes / 4), 64 * 1024);
}

/** The line put between the head and the tail when the middle of a stream was left out. */
export function omissionMarker(stream: StreamName, omitted: number, file: string | null): string {
  const where = file
    ? `the whole ${stream} is in ${file} inside the sandbox (read it in pages)`
    : `it was not kept (no spool file: raise max_output_bytes, or write the output to a file yourself)`;
  return `\n[forkbox: ${omitted} bytes of ${stream} omitted here; ${where}]\n`;
}

/** Collects one stream's head and tail bytes as the events arrive. */
export class StreamCollector {
  readonly #head: Buffer[] = [];
  readonly #tail: Buffer[] = [];
  #headBytes = 0;
  #tailBytes = 0;

  constructor(readonly stream: StreamName) {}

  addHead(data: Buffer): void {
    this.#head.push(data);
    this.#headBytes += data.length;
  }

  addTail(data: Buffer): void {
    this.#tail.push(data);
    this.#tailBytes += data.length;
  }

  get shownBytes(): number {
    return this.#headBytes + this.#tailBytes;
  }

  /**
   * The inline bytes and the summary, from the result's `<stream>_total`, `_file` and `_spooled` fields
   * (absent from an older agent: the shown bytes are then the whole stream).
   */
  finish(result: Record<string, unknown>): { data: Buffer; summary: StreamSummary } {
    const num = (k: string): number | null => {
      const v = result[`${this.stream}_${k}`];
      return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null;
    };
    const shown = this.shownBytes;
    // The agent is untrusted: a total below what it sent is treated as the sent amount.
    const total = Math.max(num('total') ?? shown, shown);
    const fileField = result[`${this.stream}_file`];
    const file = typeof fileField === 'string' && fileField.startsWith('/') ? fileField.slice(0, 4096) : null;
    const omitted = total - shown;
    const parts = [...this.#head];
    if (omitted > 0) parts.push(Buffer.from(omissionMarker(this.stream, omitted, file)));
    parts.push(...this.#tail);
    return {
      data: Buffer.concat(parts),
      summary: {
        totalBytes: total,
        shownBytes: shown,
        omittedBytes: omitted,
        file: omitted > 0 ? file : null,
        spooledBytes: file === null ? 0 : Math.min(num('spooled') ?? 0, total),
      },
    };
  }
}
