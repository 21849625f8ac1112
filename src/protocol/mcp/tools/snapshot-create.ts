import { z } from 'zod';
import { snapshotOut, snapshotShape } from '../snapshot-shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../tool-kit.ts';

export const snapshotCreate = defineTool({
  name: 'snapshot_create',
  title: 'Snapshot a sandbox',
  description:
    "Save a running sandbox's current state under a name: its files, and a live copy of its Python REPL (variables, modules, data). Restore it any number of times with snapshot_restore. The sandbox keeps running (it is paused only briefly). The Python state survives daemon restarts but not a host reboot; after that, restores bring back files only (python_state: false).",
  annotations: HINTS.create,
  input: z.object({
    sandbox: sandboxArg,
    name: z
      .string()
      .regex(/^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/)
      .optional()
      .describe('Unique snapshot name (default: its id).'),
  }),
  output: snapshotShape,
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    return {
      structured: snapshotOut(await api.createSnapshot(id, a.name === undefined ? {} : { name: a.name })),
    };
  },
});
