/**
 * The `microsandbox` toolset: the MCP endpoint of microsandbox's `msb server` (its `/mcp`), five tools
 * addressing a sandbox by `sandbox` name and `namespace` (forkbox's namespaces), with `msb server`'s
 * results (its internal JSON-RPC result, pretty-printed into one text block: tool.ts), its `Error: …`
 * failures (errors.ts) and its two prompts (prompts.ts). docs/TOOLSETS.md maps each tool.
 */
import type { Toolset } from '../../toolset.ts';
import { registerMicrosandboxPrompts } from './prompts.ts';
import { sandboxGetMetrics } from './sandbox-get-metrics.ts';
import { sandboxRunCode } from './sandbox-run-code.ts';
import { sandboxRunCommand } from './sandbox-run-command.ts';
import { sandboxStart } from './sandbox-start.ts';
import { sandboxStop } from './sandbox-stop.ts';

export const microsandboxToolset: Toolset = {
  name: 'microsandbox',
  summary: "microsandbox's msb server tools (sandbox_start, sandbox_run_code, …) in forkbox namespaces",
  session: 'explicit',
  tools: [sandboxStart, sandboxStop, sandboxRunCode, sandboxRunCommand, sandboxGetMetrics],
  registerExtras: registerMicrosandboxPrompts,
};
