import { z } from 'zod';
import { ForkboxError } from '../../../../domain/errors.ts';
import { nameSchema } from '../../../bounds.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { nameArg, snapshotSource } from './shapes.ts';
import { akTool } from './tool.ts';

/**
 * A new sandbox from the snapshot (its files, and its Python state while the snapshot holds one), named
 * `as_name`, by default `<original sandbox>-restored` as agentkernel named it. The restored sandbox
 * belongs to this connection's session (forkbox's restores do), so it outlives the connection by the
 * session grace, not indefinitely like a sandbox_create one.
 */
export const snapshotRestore = akTool({
  name: 'snapshot_restore',
  title: 'Restore a snapshot',
  description: 'Restore a sandbox from a snapshot.',
  annotations: HINTS.create,
  input: z.object({
    name: nameArg.describe('Name of the snapshot to restore'),
    as_name: nameSchema()
      .optional()
      .describe("Name for the restored sandbox (defaults to original + '-restored')"),
  }),
  async run(a, { api }) {
    const snap = await api.getSnapshot(a.name);
    const original = (await snapshotSource(api, snap))?.name ?? snap.source;
    const restoreName = a.as_name ?? `${original}-restored`;
    const r = await api.restoreSnapshot(snap.id, { n: 1, names: [restoreName] });
    const child = r.children[0];
    if (!child?.ok || !child.sandbox) {
      throw new ForkboxError(
        (child?.error?.code as ForkboxError['code'] | undefined) ?? 'internal',
        child?.error?.message ?? 'the restored sandbox failed to start',
      );
    }
    return `Restored snapshot '${a.name}' as sandbox '${restoreName}'.`;
  },
});
