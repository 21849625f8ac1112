/**
 * Podflare's error convention. Its MCP server (Node, the TypeScript SDK) let the Podflare SDK's errors
 * throw, which the SDK turned into an isError result whose text is the error's message; the API under
 * it answered 400 (bad body), 404 (unknown sandbox, a re-merge) and 500. Here: the message (which says
 * what to do next, with forkbox's CLI hints replaced by what a Podflare session can do) and the HTTP
 * status forkbox's catalog gives its code.
 */
import { ERROR_CODES, type ForkboxError } from '../../../../domain/errors.ts';
import { mcpMessage } from '../../kit/errors.ts';

const REWRITES: readonly [RegExp, string][] = [
  [/List sandboxes with 'forkbox ls'/g, 'Use the ids fork returned'],
  [/Create a new one with 'forkbox create'/g, 'Reconnect for a new session sandbox'],
];

export function podflareErrorText(_tool: string, err: ForkboxError): string {
  let m = err.message;
  for (const [re, to] of REWRITES) m = m.replace(re, to);
  return `${mcpMessage(m)} (HTTP ${ERROR_CODES[err.code].http}, ${err.code})`;
}
