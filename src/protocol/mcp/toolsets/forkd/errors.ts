/**
 * forkd's error convention. Its MCP server forwarded each call to the controller's REST API and let
 * `raise_for_status()` raise, which FastMCP turned into an isError result "Error executing tool NAME:
 * …"; the controller's body was `{"error": "message"}` with an HTTP status. Here: the same prefix, the
 * status forkbox's catalog gives the code, and the message (which says what to do next) with forkbox's
 * CLI hints replaced by the forkd tools that do it.
 */
import { ERROR_CODES, type ForkboxError } from '../../../../domain/errors.ts';
import { mcpMessage } from '../../kit/errors.ts';

const REWRITES: readonly [RegExp, string][] = [
  [/List sandboxes with 'forkbox ls'/g, 'List sandboxes with list_sandboxes'],
  [/List snapshots with 'forkbox snapshot ls'/g, 'List snapshots with list_snapshots'],
  [
    /List them with 'forkbox templates ls', or define it with 'forkbox templates define [^']*'/g,
    'See list_snapshots',
  ],
  [/Create a new one with 'forkbox create'/g, 'Spawn a new one with spawn_sandboxes'],
  [/\('forkbox ls', 'forkbox kill <id>'\)/g, '(list_sandboxes, then kill_sandbox)'],
];

export function forkdErrorText(tool: string, err: ForkboxError): string {
  let m = err.message;
  for (const [re, to] of REWRITES) m = m.replace(re, to);
  return `Error executing tool ${tool}: ${ERROR_CODES[err.code].http} ${mcpMessage(m)} [code: ${err.code}]`;
}
