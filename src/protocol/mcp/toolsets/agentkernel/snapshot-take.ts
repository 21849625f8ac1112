import { z } from 'zod';
import { nameSchema } from '../../../bounds.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { akSnapshot, nameArg } from './shapes.ts';
import { akTool } from './tool.ts';

/**
 * A forkbox snapshot: the sandbox's files (and its Python REPL's live state) frozen under `name`,
 * restorable any number of times. agentkernel's Docker backend committed the container's filesystem
 * only; forkbox keeps the files and, while the snapshot holds it, the Python state too.
 */
export const snapshotTake = akTool({
  name: 'snapshot_take',
  title: 'Take a snapshot',
  description: 'Take a snapshot of a sandbox (its files, restorable with snapshot_restore).',
  annotations: HINTS.create,
  input: z.object({
    sandbox: nameArg.describe('Name of the sandbox to snapshot'),
    name: nameSchema().describe('Name for the snapshot'),
  }),
  async run(a, { api }) {
    const source = await api.getSandbox(a.sandbox);
    const snap = await api.createSnapshot(source.id, { name: a.name });
    return akSnapshot(snap, source);
  },
});
