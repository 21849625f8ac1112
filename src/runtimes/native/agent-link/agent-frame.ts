/**
 * Framing of the host ↔ agent protocol (docs/AGENT-PROTOCOL.md, "Framing"):
 *   u32 header_len (BE) | u32 body_len (BE) | header: UTF-8 JSON object with a string `t` | body: raw bytes
 * Everything decoded here comes from inside a sandbox and is untrusted: bounds are checked before
 * buffering, so a peer announcing a 4 GiB frame costs us nothing.
 */
import { ForkboxError } from '../../../domain/errors.ts';
import { AGENT_BOUNDS } from '../../../domain/limits.ts';

/** The agent holds frames to the same bounds (it is handed them: domain/limits.ts AGENT_BOUNDS). */
export const MAX_HEADER_BYTES = AGENT_BOUNDS.frameHeaderBytes;
export const MAX_BODY_BYTES = AGENT_BOUNDS.frameBodyBytes;
const MIN_HEADER_BYTES = 2;
const PREFIX_BYTES = 8;

export interface FrameHeader {
  t: string;
  [key: string]: unknown;
}

export interface Frame {
  header: FrameHeader;
  body: Buffer;
}

function protocolError(message: string): ForkboxError {
  return new ForkboxError('agent_protocol', `malformed frame from the sandbox agent: ${message}`);
}

/** Encode one frame. Throws `too_large` when the header or body is over the limits. */
export function encodeFrame(header: FrameHeader, body?: Uint8Array): Buffer {
  const h = Buffer.from(JSON.stringify(header), 'utf8');
  const b = body ?? Buffer.alloc(0);
  if (h.length > MAX_HEADER_BYTES) {
    throw new ForkboxError(
      'too_large',
      `request header of ${h.length} bytes is over the ${MAX_HEADER_BYTES}-byte limit; send less per request`,
    );
  }
  if (b.length > MAX_BODY_BYTES) {
    throw new ForkboxError(
      'too_large',
      `request body of ${b.length} bytes is over the ${MAX_BODY_BYTES}-byte limit; send it in parts`,
    );
  }
  const prefix = Buffer.allocUnsafe(PREFIX_BYTES);
  prefix.writeUInt32BE(h.length, 0);
  prefix.writeUInt32BE(b.length, 4);
  return Buffer.concat([prefix, h, b]);
}

function parseHeader(raw: Buffer): FrameHeader {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw));
  } catch (e) {
    throw protocolError(`header is not UTF-8 JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw protocolError('header is not a JSON object');
  }
  if (typeof (value as { t?: unknown }).t !== 'string') throw protocolError("header has no string field 't'");
  return value as FrameHeader;
}

/**
 * Incremental decoder: push() chunks as they arrive (any split or merge), get complete frames back.
 * After it throws, the stream is unusable: close the connection.
 */
export class FrameDecoder {
  #chunks: Buffer[] = [];
  #head = 0;
  #buffered = 0;
  #need: { header: number; body: number } | null = null;
  #failed = false;

  get bufferedBytes(): number {
    return this.#buffered;
  }

  push(chunk: Buffer): Frame[] {
    if (this.#failed) throw protocolError('decoder already failed');
    if (chunk.length > 0) {
      this.#chunks.push(chunk);
      this.#buffered += chunk.length;
    }
    const frames: Frame[] = [];
    try {
      for (;;) {
        if (this.#need === null) {
          if (this.#buffered < PREFIX_BYTES) break;
          const prefix = this.#take(PREFIX_BYTES);
          const header = prefix.readUInt32BE(0);
          const body = prefix.readUInt32BE(4);
          if (header < MIN_HEADER_BYTES || header > MAX_HEADER_BYTES) {
            throw protocolError(
              `header length ${header} is outside ${MIN_HEADER_BYTES}..${MAX_HEADER_BYTES}`,
            );
          }
          if (body > MAX_BODY_BYTES)
            throw protocolError(`body length ${body} is over the ${MAX_BODY_BYTES}-byte limit`);
          this.#need = { header, body };
        }
        const need = this.#need;
        if (this.#buffered < need.header + need.body) break;
        const header = parseHeader(this.#take(need.header));
        const body = need.body === 0 ? Buffer.alloc(0) : this.#take(need.body);
        this.#need = null;
        frames.push({ header, body });
      }
    } catch (e) {
      this.#failed = true;
      this.#chunks = [];
      this.#head = 0;
      this.#buffered = 0;
      throw e;
    }
    return frames;
  }

  /** Remove and return exactly n buffered bytes (copying only when they span chunks). */
  #take(n: number): Buffer {
    const chunks = this.#chunks;
    const first = chunks[this.#head];
    if (first === undefined) throw protocolError('internal decoder underflow');
    let out: Buffer;
    if (first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.#head++;
      else chunks[this.#head] = first.subarray(n);
    } else {
      out = Buffer.allocUnsafe(n);
      let off = 0;
      while (off < n) {
        const c = chunks[this.#head];
        if (c === undefined) throw protocolError('internal decoder underflow');
        const k = Math.min(c.length, n - off);
        c.copy(out, off, 0, k);
        off += k;
        if (k === c.length) this.#head++;
        else chunks[this.#head] = c.subarray(k);
      }
    }
    // Drop consumed chunks by index, not shift(): a peer trickling 1-byte chunks must not cost O(n^2).
    if (this.#head === chunks.length) {
      this.#chunks = [];
      this.#head = 0;
    } else if (this.#head > 1024) {
      this.#chunks = chunks.slice(this.#head);
      this.#head = 0;
    }
    this.#buffered -= n;
    return out;
  }
}
