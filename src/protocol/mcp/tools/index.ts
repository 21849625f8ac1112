/** The canonical `forkbox` toolset, in the order tools/list returns them. */
import type { ToolDef } from '../kit/tool-kit.ts';
import { codeReset } from './code-reset.ts';
import { codeRun } from './code-run.ts';
import { execCancel } from './exec-cancel.ts';
import { execList } from './exec-list.ts';
import { execPoll } from './exec-poll.ts';
import { execRun } from './exec-run.ts';
import { execStart } from './exec-start.ts';
import { execWriteStdin } from './exec-write-stdin.ts';
import { fileDelete } from './file-delete.ts';
import { fileEdit } from './file-edit.ts';
import { fileList } from './file-list.ts';
import { fileMove } from './file-move.ts';
import { fileRead } from './file-read.ts';
import { fileStat } from './file-stat.ts';
import { fileWrite } from './file-write.ts';
import { imageList } from './image-list.ts';
import { portExpose } from './port-expose.ts';
import { portList } from './port-list.ts';
import { sandboxCreate } from './sandbox-create.ts';
import { sandboxDiff } from './sandbox-diff.ts';
import { sandboxExtend } from './sandbox-extend.ts';
import { sandboxFork } from './sandbox-fork.ts';
import { sandboxGet } from './sandbox-get.ts';
import { sandboxKill } from './sandbox-kill.ts';
import { sandboxList } from './sandbox-list.ts';
import { sandboxMerge } from './sandbox-merge.ts';
import { sandboxPause } from './sandbox-pause.ts';
import { sandboxResume } from './sandbox-resume.ts';
import { snapshotCreate } from './snapshot-create.ts';
import { snapshotDelete } from './snapshot-delete.ts';
import { snapshotGet } from './snapshot-get.ts';
import { snapshotList } from './snapshot-list.ts';
import { snapshotRestore } from './snapshot-restore.ts';
import { systemStatus } from './system-status.ts';
import { templateDefine } from './template-define.ts';
import { templateDelete } from './template-delete.ts';
import { templateList } from './template-list.ts';
import { waitForText } from './wait-for-text.ts';

export const CANONICAL_TOOLS: readonly ToolDef[] = [
  sandboxCreate,
  sandboxList,
  sandboxGet,
  sandboxKill,
  sandboxExtend,
  sandboxPause,
  sandboxResume,
  sandboxFork,
  sandboxMerge,
  sandboxDiff,
  snapshotCreate,
  snapshotList,
  snapshotGet,
  snapshotDelete,
  snapshotRestore,
  execRun,
  execStart,
  execPoll,
  execWriteStdin,
  execCancel,
  execList,
  codeRun,
  codeReset,
  fileRead,
  fileWrite,
  fileEdit,
  fileList,
  fileStat,
  fileDelete,
  fileMove,
  waitForText,
  portExpose,
  portList,
  systemStatus,
  imageList,
  templateList,
  templateDefine,
  templateDelete,
];
