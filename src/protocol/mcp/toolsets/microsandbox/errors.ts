/**
 * microsandbox's error convention. `msb server` answered a failed tool call as an isError result with
 * one text block `Error: <message>` (its internal JSON-RPC error's message). Here: the same prefix and
 * forkbox's message (which says what to do next), with forkbox's CLI hints replaced by the microsandbox
 * tools that do it.
 */
import type { ForkboxError } from '../../../../domain/errors.ts';
import { mcpMessage } from '../../kit/errors.ts';

const REWRITES: readonly [RegExp, string][] = [
  [/List sandboxes with 'forkbox ls'/g, "List sandboxes with sandbox_get_metrics (namespace '*')"],
  [/Resume it with 'forkbox resume [^']*'/g, 'Stop it with sandbox_stop and start it again'],
  [/Create a new one with 'forkbox create'/g, 'Start one with sandbox_start'],
  [/\('forkbox ls', 'forkbox kill <id>'\)/g, '(sandbox_get_metrics, then sandbox_stop)'],
];

export function microsandboxErrorText(_tool: string, err: ForkboxError): string {
  let m = err.message;
  for (const [re, to] of REWRITES) m = m.replace(re, to);
  return `Error: ${mcpMessage(m)}`;
}
