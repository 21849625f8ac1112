/**
 * The toolset registry (`forkbox mcp --toolset NAME`, `forkbox serve --toolset NAME`, and on the HTTP
 * listener `/mcp/<name>`). `forkbox` is the canonical set; each compatibility toolset speaks another
 * sandbox system's MCP language (toolset.ts) and lives in toolsets/<name>/. docs/TOOLSETS.md says what
 * each tool maps to.
 */
import { ForkboxError } from '../../domain/errors.ts';
import { BROWSER_TOOLS } from './tools/browser/index.ts';
import { CANONICAL_TOOLS } from './tools/index.ts';
import { canonicalTool, type Toolset, type ToolsetTool } from './toolset.ts';
import { agentkernelToolset } from './toolsets/agentkernel/index.ts';
import { devbenchToolset } from './toolsets/devbench/index.ts';
import { forkdToolset } from './toolsets/forkd/index.ts';
import { microsandboxToolset } from './toolsets/microsandbox/index.ts';
import { podflareToolset } from './toolsets/podflare/index.ts';

export const DEFAULT_TOOLSET = 'forkbox';

const CANONICAL_INSTRUCTIONS =
  'forkbox runs commands, code and file operations in isolated Linux sandboxes (no network unless created with a `network` allow list). Tools that act on a sandbox take an optional `sandbox` (id or name); without it they use your default sandbox, created on first use. Python code_run calls share one persistent REPL per sandbox. Large outputs are cut in the middle and kept in a file in the sandbox (the result names it and which bytes it holds; read it with file_read). For work longer than a minute, use exec_start and poll with exec_poll.';

export const canonicalToolset: Toolset = {
  name: DEFAULT_TOOLSET,
  summary: "forkbox's own tools (sandboxes, forks, snapshots, execs, the Python REPL, files, ports)",
  session: 'default-sandbox',
  instructions: CANONICAL_INSTRUCTIONS,
  tools: CANONICAL_TOOLS.map(canonicalTool),
};

/**
 * forkbox's browser tools, a toolset of their own so that the canonical list (paid in tokens on every
 * turn) does not grow by twelve tools for clients that never open a page: `--toolset forkbox --toolset
 * browser`, or `/mcp/browser` (docs/BROWSER.md).
 */
export const browserToolset: Toolset = {
  name: 'browser',
  summary:
    "forkbox's browser tools (open, snapshot with refs, click/fill/select/press by ref, screenshot, events)",
  session: 'default-sandbox',
  instructions:
    "The browser tools drive a Chromium inside a forkbox sandbox whose image has it (create the sandbox with image 'debian-browser'). Elements are named by the refs of the latest snapshot (e12); refs change when the page does.",
  tools: BROWSER_TOOLS.map(canonicalTool),
};

export const TOOLSETS: Readonly<Record<string, Toolset>> = {
  forkbox: canonicalToolset,
  browser: browserToolset,
  forkd: forkdToolset,
  podflare: podflareToolset,
  agentkernel: agentkernelToolset,
  devbench: devbenchToolset,
  microsandbox: microsandboxToolset,
};

/** The named toolsets, in order (none: the default one). */
export function selectToolsets(names: readonly string[] = [DEFAULT_TOOLSET]): Toolset[] {
  return (names.length === 0 ? [DEFAULT_TOOLSET] : names).map((n) => {
    const set = Object.hasOwn(TOOLSETS, n) ? TOOLSETS[n] : undefined;
    if (!set) {
      throw new ForkboxError(
        'invalid_argument',
        `unknown toolset '${n}'. Available: ${Object.keys(TOOLSETS).join(', ')}.`,
        { toolset: n },
      );
    }
    return set;
  });
}

/** The tools of the named toolsets, in order, each name once (the first toolset naming it wins). */
export function selectTools(names: readonly string[] = [DEFAULT_TOOLSET]): ToolsetTool[] {
  const picked = new Map<string, ToolsetTool>();
  for (const set of selectToolsets(names)) {
    for (const t of set.tools) if (!picked.has(t.name)) picked.set(t.name, t);
  }
  return [...picked.values()];
}
