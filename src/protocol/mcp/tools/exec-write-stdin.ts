import { z } from 'zod';
import { defineTool, sandboxArg } from '../kit/tool-kit.ts';

export const execWriteStdin = defineTool({
  name: 'exec_write_stdin',
  title: 'Write to stdin',
  description: 'Write to the stdin of a command started with exec_start(stdin: true).',
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  input: z.object({
    sandbox: sandboxArg,
    exec_id: z.string().min(1).max(64).describe('From exec_start'),
    data: z
      .string()
      .max(8 * 1024 * 1024)
      .describe('Data to write'),
    encoding: z.enum(['utf8', 'base64']).optional().describe('Of data (default utf8)'),
    eof: z.boolean().optional().describe('Close stdin afterwards'),
  }),
  output: z.object({ written_bytes: z.number(), eof: z.boolean() }),
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    const data = Buffer.from(a.data, a.encoding === 'base64' ? 'base64' : 'utf8');
    await api.writeExecStdin(id, a.exec_id, data, a.eof === true);
    return { structured: { written_bytes: data.length, eof: a.eof === true } };
  },
});
