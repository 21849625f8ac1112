import { z } from 'zod';
import { ForkboxError } from '../../../../domain/errors.ts';
import { COMPAT_LIMITS } from '../../../../domain/limits.ts';
import { boundedNumber } from '../../../bounds.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { podflareErrorText } from './errors.ts';
import { sandboxIdArg } from './shapes.ts';

/** A fork of the session sandbox (files, Python REPL state; not other processes): the children's ids. */
export const fork = compatTool(
  {
    name: 'fork',
    title: 'Fork',
    description:
      "Snapshot the sandbox and spawn n children from this moment's state (files and Python REPL state). Returns the list of child sandbox IDs.",
    annotations: HINTS.create,
    input: z.object({
      n: boundedNumber(COMPAT_LIMITS.podflareFork).default(1).describe('Children (1-32)'),
      sandbox_id: sandboxIdArg,
    }),
    async run(a, { api, sandbox }) {
      const r = await api.forkSandbox(await sandbox(a.sandbox_id), { n: a.n });
      const failed = r.children.find((c) => !c.ok || !c.sandbox);
      if (failed) {
        // All or nothing: the children that did start are not left behind.
        await Promise.all(
          r.children.flatMap((c) =>
            c.sandbox ? [api.killSandbox(c.sandbox.id).catch(() => undefined)] : [],
          ),
        );
        throw new ForkboxError(
          (failed.error?.code as ForkboxError['code'] | undefined) ?? 'internal',
          failed.error?.message ?? 'a child failed to start',
        );
      }
      return r.children.map((c) => c.sandbox?.id as string);
    },
  },
  podflareErrorText,
);
