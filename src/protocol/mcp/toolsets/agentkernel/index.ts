/**
 * The `agentkernel` toolset: agentkernel's MCP server (`agentkernel mcp-server`), the 21 tools of its
 * published MCP page with their names, arguments and defaults, answering agentkernel's text results
 * (cut to 16 KB head + tail, tool.ts) and its `Error: …` failures (errors.ts). Every tool names its
 * sandbox (by name) and agentkernel had no prompts or resources. The six browser tools answer a clear
 * "not available yet" until forkbox's browser support exists. docs/TOOLSETS.md maps each tool.
 */
import type { Toolset } from '../../toolset.ts';
import {
  browserClick,
  browserClose,
  browserEvents,
  browserFill,
  browserOpen,
  browserSnapshot,
} from './browser-tools.ts';
import { sandboxCreate } from './sandbox-create.ts';
import { sandboxExec } from './sandbox-exec.ts';
import { sandboxExtendTtl } from './sandbox-extend-ttl.ts';
import { sandboxFileRead } from './sandbox-file-read.ts';
import { sandboxFileWrite } from './sandbox-file-write.ts';
import { sandboxList } from './sandbox-list.ts';
import { sandboxRemove } from './sandbox-remove.ts';
import { sandboxRun } from './sandbox-run.ts';
import { sandboxStart } from './sandbox-start.ts';
import { sandboxStop } from './sandbox-stop.ts';
import { snapshotDelete } from './snapshot-delete.ts';
import { snapshotGet } from './snapshot-get.ts';
import { snapshotList } from './snapshot-list.ts';
import { snapshotRestore } from './snapshot-restore.ts';
import { snapshotTake } from './snapshot-take.ts';

export const agentkernelToolset: Toolset = {
  name: 'agentkernel',
  summary: "agentkernel's tools (sandbox_run, sandbox_exec, snapshot_take, …) on named forkbox sandboxes",
  session: 'explicit',
  tools: [
    sandboxRun,
    sandboxCreate,
    sandboxExec,
    sandboxList,
    sandboxRemove,
    sandboxStart,
    sandboxStop,
    sandboxFileWrite,
    sandboxFileRead,
    sandboxExtendTtl,
    snapshotList,
    snapshotTake,
    snapshotGet,
    snapshotDelete,
    snapshotRestore,
    browserOpen,
    browserSnapshot,
    browserClick,
    browserFill,
    browserClose,
    browserEvents,
  ],
};
