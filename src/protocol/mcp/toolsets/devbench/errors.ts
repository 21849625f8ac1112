/**
 * DevBench's error convention. Its server (FastMCP 2.13) let each manager's exception propagate, and
 * FastMCP turned it into an isError result "Error calling tool 'NAME': MESSAGE" (error details not
 * masked, its default). Here: the same prefix and forkbox's message (which says what to do next) with
 * forkbox's CLI hints replaced by the DevBench tools that do it, then the catalog code in brackets.
 */
import type { ForkboxError } from '../../../../domain/errors.ts';
import { mcpMessage } from '../../kit/errors.ts';

const REWRITES: readonly [RegExp, string][] = [
  [/List sandboxes with 'forkbox ls'/g, 'List containers with list_containers'],
  [/Create a new one with 'forkbox create'/g, 'Spawn a new one with spawn'],
  [/\('forkbox ls', 'forkbox kill <id>'\)/g, '(list_containers, then kill)'],
  [/Re-read it with file_read/g, 'Re-read it with fs_read'],
];

export function devbenchErrorText(tool: string, err: ForkboxError): string {
  let m = err.message;
  for (const [re, to] of REWRITES) m = m.replace(re, to);
  return `Error calling tool '${tool}': ${mcpMessage(m)} [code: ${err.code}]`;
}
