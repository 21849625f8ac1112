import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { isForkboxError } from '../../../domain/errors.ts';
import { defineTool, HINTS, pathArg, sandboxArg } from '../tool-kit.ts';

const POLL_MS = 250;
const DEFAULT_TIMEOUT_S = 30;

export const waitForText = defineTool({
  name: 'wait_for_text',
  title: 'Wait for text in a file',
  description: `Wait until a file in a sandbox contains \`marker\` (e.g. a server's "listening" line in its log), checking every ${POLL_MS} ms for up to timeout_s (default ${DEFAULT_TIMEOUT_S}, max 600). A missing file counts as not yet. Returns found=false on timeout (not an error).`,
  annotations: HINTS.read,
  input: z.object({
    sandbox: sandboxArg,
    path: pathArg,
    marker: z.string().min(1).max(4096),
    timeout_s: z.number().min(0).max(600).optional(),
  }),
  output: z.object({
    path: z.string(),
    found: z.boolean(),
    waited_ms: z.number(),
    size: z.number().nullable(),
  }),
  async run(a, { api, sandbox, signal }) {
    const id = await sandbox(a.sandbox);
    // An unknown sandbox (or another tenant's) is not_found at once, not a file that is "not there yet".
    await api.getSandbox(id);
    const start = Date.now();
    const deadline = start + (a.timeout_s ?? DEFAULT_TIMEOUT_S) * 1000;
    let size: number | null = null;
    for (;;) {
      try {
        const r = await api.readFile(id, a.path);
        size = r.size;
        if (r.data.toString('utf8').includes(a.marker)) {
          return { structured: { path: a.path, found: true, waited_ms: Date.now() - start, size } };
        }
      } catch (e) {
        if (!isForkboxError(e) || e.code !== 'not_found') throw e;
      }
      if (Date.now() + POLL_MS > deadline || signal.aborted) {
        return { structured: { path: a.path, found: false, waited_ms: Date.now() - start, size } };
      }
      await sleep(POLL_MS, undefined, { signal }).catch(() => undefined);
    }
  },
});
