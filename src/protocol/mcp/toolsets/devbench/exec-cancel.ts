import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { auditEvent } from './audit.ts';
import { devbenchErrorText } from './errors.ts';
import { parseExecId } from './ids.ts';
import { inputData } from './shapes.ts';

export const execCancel = compatTool(
  {
    name: 'exec_cancel',
    title: 'Cancel exec',
    description: 'Cancel a running execution (its whole process tree ends).',
    annotations: HINTS.destroy,
    input: inputData({ exec_id: z.string().min(1).max(140).describe('Execution ID to cancel') }),
    async run({ input_data: a }, { api, log }) {
      const id = parseExecId(a.exec_id);
      await api.cancelExec(id.sandbox, id.exec);
      auditEvent(log, 'exec_cancel', { container_id: id.sandbox, details: { exec_id: a.exec_id } });
      return { status: 'cancelled', exec_id: a.exec_id };
    },
  },
  devbenchErrorText,
);
