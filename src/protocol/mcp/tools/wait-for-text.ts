import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { isForkboxError } from '../../../domain/errors.ts';
import { defineTool, HINTS, pathArg, sandboxArg } from '../tool-kit.ts';

const POLL_MS = 250;
/** Bytes read per look: the file is scanned forward from where the last look ended, never whole. */
const PAGE = 4 * 1024 * 1024;
const DEFAULT_TIMEOUT_S = 30;

export const waitForText = defineTool({
  name: 'wait_for_text',
  title: 'Wait for text',
  description: `Wait until a file contains marker (e.g. a server's "listening" log line); found=false after timeout_s (default ${DEFAULT_TIMEOUT_S}).`,
  annotations: HINTS.read,
  input: z.object({
    sandbox: sandboxArg,
    path: pathArg,
    marker: z.string().min(1).max(4096).describe('Text to wait for'),
    timeout_s: z.number().min(0).max(600).optional().describe('Seconds to wait at most'),
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
    const marker = Buffer.from(a.marker, 'utf8');
    let scanned = 0; // bytes already searched (a marker may straddle the boundary: overlap by its length)
    for (;;) {
      let more = false;
      try {
        const offset = Math.max(0, scanned - marker.length + 1);
        const r = await api.readFile(id, a.path, { offset, length: PAGE });
        size = r.size;
        if (r.data.includes(marker)) {
          return { structured: { path: a.path, found: true, waited_ms: Date.now() - start, size } };
        }
        scanned = r.size < scanned ? 0 : offset + r.data.length; // truncated or replaced: start over
        more = scanned < r.size;
      } catch (e) {
        if (!isForkboxError(e) || e.code !== 'not_found') throw e;
        scanned = 0;
      }
      if (more && !signal.aborted && Date.now() < deadline) continue;
      if (Date.now() + POLL_MS > deadline || signal.aborted) {
        return { structured: { path: a.path, found: false, waited_ms: Date.now() - start, size } };
      }
      await sleep(POLL_MS, undefined, { signal }).catch(() => undefined);
    }
  },
});
