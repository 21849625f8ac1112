/**
 * How a test (or a bench) starts `forkbox mcp` as a stdio MCP server: the parameters both SDKs'
 * StdioClientTransport take (v1 `@modelcontextprotocol/sdk` and `@modelcontextprotocol/client`), so each
 * caller picks its own SDK and still spawns the server one way.
 */
import { join } from 'node:path';
import { ROOT } from './daemon.ts';

/** This process's environment without its unset entries (what a child process is given). */
export function processEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return env;
}

export interface McpServerParams {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  stderr: 'ignore' | 'pipe';
}

/** `node bin/forkbox.js --state-dir <stateDir> mcp …extraArgs` with this process's environment (+ env). */
export function forkboxMcpServer(
  stateDir: string,
  opts: { stderr?: 'ignore' | 'pipe'; extraArgs?: string[]; env?: Record<string, string> } = {},
): McpServerParams {
  return {
    command: process.execPath,
    args: [join(ROOT, 'bin/forkbox.js'), '--state-dir', stateDir, 'mcp', ...(opts.extraArgs ?? [])],
    env: { ...processEnv(), ...opts.env },
    cwd: ROOT,
    stderr: opts.stderr ?? 'ignore',
  };
}
