/**
 * The `forkd` toolset: forkd's MCP server (`forkd-mcp`), its 11 tools with their names, arguments and
 * defaults, answering forkd's raw JSON values (compat-tool.ts) with forkd's errors (errors.ts). forkd's
 * server was stateless — every tool names its sandbox — and had no prompts or resources.
 * docs/TOOLSETS.md maps each tool onto forkbox.
 */
import type { Toolset } from '../../toolset.ts';
import { branchSandbox } from './branch-sandbox.ts';
import { createSnapshot } from './create-snapshot.ts';
import { evalCode } from './eval-code.ts';
import { execCommand } from './exec-command.ts';
import { getSandbox } from './get-sandbox.ts';
import { killSandbox } from './kill-sandbox.ts';
import { listSandboxes } from './list-sandboxes.ts';
import { listSnapshots } from './list-snapshots.ts';
import { pingSandbox } from './ping-sandbox.ts';
import { spawnSandboxes } from './spawn-sandboxes.ts';
import { waitForText } from './wait-for-text.ts';

export const forkdToolset: Toolset = {
  name: 'forkd',
  summary: "forkd's tools (spawn_sandboxes, branch_sandbox, eval_code, …) over forkbox's forks and snapshots",
  session: 'explicit',
  tools: [
    listSnapshots,
    createSnapshot,
    spawnSandboxes,
    branchSandbox,
    listSandboxes,
    getSandbox,
    killSandbox,
    execCommand,
    evalCode,
    pingSandbox,
    waitForText,
  ],
};
