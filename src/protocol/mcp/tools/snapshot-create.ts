import { z } from 'zod';
import { snapshotOut, snapshotShape } from '../kit/snapshot-shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../kit/tool-kit.ts';

export const snapshotCreate = defineTool({
  name: 'snapshot_create',
  title: 'Snapshot sandbox',
  description:
    "Save a sandbox's files and live Python REPL under a name, to restore many times. After a host reboot: files only.",
  annotations: HINTS.create,
  input: z.object({
    sandbox: sandboxArg,
    name: z
      .string()
      .regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/)
      .optional()
      .describe('Unique name (default: its id)'),
  }),
  output: snapshotShape,
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    return {
      structured: snapshotOut(await api.createSnapshot(id, a.name === undefined ? {} : { name: a.name })),
    };
  },
});
