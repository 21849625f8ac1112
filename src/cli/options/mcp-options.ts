/** Parsing of the MCP options `forkbox mcp` and `forkbox serve` share. */
import { ForkboxError } from '../../domain/errors.ts';
import { MAX_SESSION_GRACE_MS } from '../../protocol/mcp/http/session-policy.ts';
import { MAX_MCP_OUTPUT_BYTES } from '../../protocol/mcp/kit/exec-args.ts';
import { parseDuration, parseSize } from '../parse.ts';

/** `0` (end with the connection) or a duration, at most a day. */
export function parseGrace(text: string, flag: string): number {
  const ms = text.trim() === '0' ? 0 : Math.round(parseDuration(text) * 1000);
  if (ms > MAX_SESSION_GRACE_MS) {
    throw new ForkboxError('invalid_argument', `${flag} is at most 24h (got '${text}').`);
  }
  return ms;
}

/** Inline output per stream, between 1 KiB and the MCP maximum. */
export function parseOutputBytes(text: string, flag: string): number {
  const n = parseSize(text);
  if (n < 1024 || n > MAX_MCP_OUTPUT_BYTES) {
    throw new ForkboxError(
      'invalid_argument',
      `${flag} must be from 1k to ${MAX_MCP_OUTPUT_BYTES / 1024}k (got '${text}').`,
    );
  }
  return n;
}
