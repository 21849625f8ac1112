/**
 * What a toolset is: the tools a server exposes under one name, plus what the system it speaks for had
 * besides tools (prompts, resources) and its session model. `forkbox` is the canonical set
 * (tools/, defined with tool-kit.ts); compatibility toolsets (toolsets/<name>/) speak another sandbox
 * system's language — its tool names, argument names and defaults, result shapes and error convention —
 * as thin adapters over the same ForkboxApi (compat-tool.ts). The registry is toolsets.ts.
 */
import type { McpServer } from '@modelcontextprotocol/server';
import type { ToolDef } from './kit/tool-kit.ts';
import { type RunnerOptions, registerTool, type ToolBase } from './kit/tool-runner.ts';

/**
 * How a toolset's tools find their sandbox:
 * - `default-sandbox`: a per-sandbox tool called without one uses the connection's default sandbox,
 *   created on first use (one per stdio connection, HTTP session or token: default-sandbox.ts);
 * - `explicit`: every tool names its sandbox (the system had no notion of "yours").
 */
export type SessionModel = 'default-sandbox' | 'explicit';

/** One tool of a toolset, ready to be put on a server. */
export interface ToolsetTool {
  name: string;
  /** Changes host-wide configuration: listed only to the host's own tenant. */
  hostOnly?: boolean;
  register(server: McpServer, base: ToolBase, opts: RunnerOptions | undefined): void;
}

export interface Toolset {
  name: string;
  /** One line for `--help` and docs/TOOLSETS.md. */
  summary: string;
  session: SessionModel;
  /** The server's instructions for this toolset (absent: none, as the system had none). */
  instructions?: string;
  tools: readonly ToolsetTool[];
  /** The prompts and resources the system offered (absent: it had none). */
  registerExtras?(server: McpServer): void;
}

/** A canonical tool (tool-kit.ts) as a toolset entry. */
export function canonicalTool(def: ToolDef): ToolsetTool {
  return {
    name: def.name,
    ...(def.hostOnly ? { hostOnly: true } : {}),
    register: (server, base, opts) => registerTool(server, def, base, opts),
  };
}
