/**
 * The `devbench` toolset: MCP DevBench's server, its 18 tools with their names, their one `input_data`
 * argument and its fields and defaults, answering DevBench's pydantic models as JSON (compat-tool.ts)
 * with FastMCP's error wording (errors.ts). Every tool names its container (session model `explicit`);
 * containers are sandboxes, execs forkbox's background execs, files live under /workspace. DevBench had
 * no prompts or resources. docs/TOOLSETS.md maps each tool onto forkbox.
 */
import type { Toolset } from '../../toolset.ts';
import { attach } from './attach.ts';
import { execCancel } from './exec-cancel.ts';
import { execPoll } from './exec-poll.ts';
import { execStart } from './exec-start.ts';
import { fsDelete } from './fs-delete.ts';
import { fsList } from './fs-list.ts';
import { fsRead } from './fs-read.ts';
import { fsStat } from './fs-stat.ts';
import { fsWrite } from './fs-write.ts';
import { garbageCollect } from './garbage-collect.ts';
import { health } from './health.ts';
import { kill } from './kill.ts';
import { listContainers } from './list-containers.ts';
import { listExecs } from './list-execs.ts';
import { metrics } from './metrics.ts';
import { reconcile } from './reconcile.ts';
import { spawn } from './spawn.ts';
import { systemStatus } from './system-status.ts';

export const devbenchToolset: Toolset = {
  name: 'devbench',
  summary: "MCP DevBench's tools (spawn, exec_start/exec_poll, fs_* with ETags, …) over forkbox sandboxes",
  session: 'explicit',
  tools: [
    health,
    spawn,
    attach,
    kill,
    execStart,
    execCancel,
    execPoll,
    fsRead,
    fsWrite,
    fsDelete,
    fsStat,
    fsList,
    reconcile,
    metrics,
    systemStatus,
    garbageCollect,
    listContainers,
    listExecs,
  ],
};
