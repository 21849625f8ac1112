/**
 * forkbox's MCP server: an McpServer (SDK v2) exposing the tools of the selected toolsets over a
 * ForkboxApi. Transport-agnostic: stdio, HTTP and in-memory tests build it the same way and choose the
 * scope of the default sandbox by the `defaults` holder they pass.
 */

import { McpServer } from '@modelcontextprotocol/server';
import { ForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi } from '../../service/api.ts';
import type { ConformanceFixtures } from './conformance/conformance-fixtures.ts';
import { createSandboxResolver, type DefaultSandbox } from './default-sandbox.ts';
import { DEFAULT_MCP_OUTPUT_BYTES } from './kit/exec-args.ts';
import type { ToolLog } from './kit/tool-kit.ts';
import type { RunnerOptions } from './kit/tool-runner.ts';
import { selectTools, selectToolsets } from './toolsets.ts';

export { createDefaultSandbox, type DefaultSandbox } from './default-sandbox.ts';

export interface ForkboxMcpServerOptions {
  api: ForkboxApi;
  defaults: DefaultSandbox;
  /** Toolset names (default ['forkbox']). */
  toolsets?: string[];
  log?: ToolLog;
  version: string;
  /**
   * Also register the MCP conformance suite's fixture tools, resources and prompts
   * (`forkbox serve --conformance-fixtures`). Absent: forkbox's tools only.
   */
  fixtures?: ConformanceFixtures | undefined;
  /** Inline output per stream of exec_run, code_run and exec_poll when a call does not say (bytes). */
  outputBytes?: number | undefined;
  /**
   * Whether the caller is the host's own tenant (default true: stdio and the local socket). Other tenants
   * are not offered host-wide tools (template_define, template_delete), which would only refuse them.
   */
  hostTenant?: boolean | undefined;
  /** Progress heartbeat period and result bound (tool-runner.ts). */
  runner?: RunnerOptions | undefined;
}

/** The resolver of toolsets whose every call names its sandbox (a call without one is a tool's bug). */
async function explicitSandbox(arg: string | undefined): Promise<string> {
  if (arg === undefined) {
    throw new ForkboxError('internal', 'a tool of an explicit-sandbox toolset asked for a default sandbox');
  }
  return arg;
}

const SILENT: ToolLog = { debug: () => undefined, info: () => undefined, warn: () => undefined };

export function createForkboxMcpServer(opts: ForkboxMcpServerOptions): McpServer {
  const sets = selectToolsets(opts.toolsets);
  const said = sets.flatMap((s) => (s.instructions === undefined ? [] : [s.instructions]));
  const instructions = said.length === 0 ? {} : { instructions: said.join('\n\n') };
  const server = new McpServer(
    { name: 'forkbox', version: opts.version },
    opts.fixtures
      ? { ...opts.fixtures.serverOptions(), ...instructions }
      : { capabilities: { tools: {} }, ...instructions },
  );
  const log = opts.log ?? SILENT;
  const base = {
    api: opts.api,
    // Only toolsets with a default sandbox may ever make one; the others name theirs in every call.
    sandbox: sets.some((s) => s.session === 'default-sandbox')
      ? createSandboxResolver(opts.api, opts.defaults)
      : explicitSandbox,
    outputBytes: opts.outputBytes ?? DEFAULT_MCP_OUTPUT_BYTES,
    log,
  };
  for (const tool of selectTools(opts.toolsets)) {
    if (tool.hostOnly && opts.hostTenant === false) continue;
    tool.register(server, base, opts.runner);
  }
  for (const s of sets) s.registerExtras?.(server);
  opts.fixtures?.register(server);
  return server;
}
