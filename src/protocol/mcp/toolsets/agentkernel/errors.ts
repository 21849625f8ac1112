/**
 * agentkernel's error convention. Its MCP server answered every failure as an isError result with one
 * text block `Error: <message>` (anyhow's message, e.g. "Sandbox 'x' not found"). Here: the same prefix
 * and forkbox's message (which says what to do next), with forkbox's CLI hints replaced by the
 * agentkernel tools that do it.
 */
import type { ForkboxError } from '../../../../domain/errors.ts';
import { mcpMessage } from '../../kit/errors.ts';

const REWRITES: readonly [RegExp, string][] = [
  [/List sandboxes with 'forkbox ls'/g, 'List sandboxes with sandbox_list'],
  [/List snapshots with 'forkbox snapshot ls'/g, 'List snapshots with snapshot_list'],
  [/Resume it with 'forkbox resume [^']*'/g, 'Start it first with sandbox_start'],
  [/Create a new one with 'forkbox create'/g, 'Create a new one with sandbox_create'],
  [
    /List images with 'forkbox images ls', or build the default one with 'forkbox images build debian'/g,
    "Give a local image name (the host's operator lists them with 'forkbox images ls') or a registry reference host/name:tag, or omit `image` for the default one",
  ],
  [/\('forkbox ls', 'forkbox kill <id>'\)/g, '(sandbox_list, then sandbox_remove)'],
];

export function agentkernelErrorText(_tool: string, err: ForkboxError): string {
  let m = err.message;
  for (const [re, to] of REWRITES) m = m.replace(re, to);
  return `Error: ${mcpMessage(m)}`;
}
