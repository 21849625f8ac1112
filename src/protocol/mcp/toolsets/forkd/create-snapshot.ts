import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { forkdErrorText } from './errors.ts';
import { forkdSnapshot, NUMPY_PRELUDE, tagArg } from './shapes.ts';

/** Said in every result: which arguments forkbox did not use, and what it did instead. */
const IGNORED =
  'kernel, rootfs, rw, tap and boot_wait_secs describe a microVM and are not used: the snapshot is of a sandbox of the default image (its REPL with numpy imported)';

export const createSnapshot = compatTool(
  {
    name: 'create_snapshot',
    title: 'Create snapshot',
    description:
      'Make a new tag to spawn from: a sandbox of the default image with numpy imported, frozen (files and live Python state). kernel/rootfs/rw/tap/boot_wait_secs are accepted and ignored (no VM).',
    annotations: HINTS.create,
    input: z.object({
      tag: tagArg.describe('Name of the new snapshot'),
      kernel: z.string().max(4096).describe('Ignored (no VM kernel)'),
      rootfs: z.string().max(4096).describe('Ignored (the default image is used)'),
      rw: z.boolean().default(false).describe('Ignored (a sandbox root is always writable)'),
      tap: z.string().max(64).optional().describe('Ignored (sandboxes have no network device)'),
      boot_wait_secs: z.number().int().min(0).max(60).default(10).describe('Ignored (no boot)'),
    }),
    async run(a, { api }) {
      const sb = await api.createSandbox({});
      try {
        await api.runCode(sb.id, { code: NUMPY_PRELUDE, timeoutSeconds: 120 });
        const snap = await api.createSnapshot(sb.id, { name: a.tag });
        // The snapshot holds its own copy: the sandbox it was taken from is not needed any more.
        return { ...forkdSnapshot(snap), warning: IGNORED };
      } finally {
        await api.killSandbox(sb.id).catch(() => undefined);
      }
    },
  },
  forkdErrorText,
);
