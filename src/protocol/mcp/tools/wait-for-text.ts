import { z } from 'zod';
import { defineTool, HINTS, pathArg, sandboxArg } from '../kit/tool-kit.ts';
import { WAIT_MAX_S, waitForMarker } from '../kit/wait-marker.ts';

const POLL_MS = 250;
const DEFAULT_TIMEOUT_S = 30;

export const waitForText = defineTool({
  name: 'wait_for_text',
  title: 'Wait for text',
  description: `Wait until a file contains marker (a server's log line); found=false after timeout_s (default ${DEFAULT_TIMEOUT_S}).`,
  annotations: HINTS.read,
  input: z.object({
    sandbox: sandboxArg,
    path: pathArg,
    marker: z.string().min(1).max(4096).describe('Text to wait for'),
    timeout_s: z.number().min(0).max(WAIT_MAX_S).optional().describe('Seconds to wait at most'),
  }),
  output: z.object({
    path: z.string(),
    found: z.boolean(),
    waited_ms: z.number(),
    size: z.number().nullable(),
  }),
  async run(a, { api, sandbox, signal }) {
    const id = await sandbox(a.sandbox);
    const w = await waitForMarker(api, id, {
      path: a.path,
      marker: a.marker,
      timeoutMs: (a.timeout_s ?? DEFAULT_TIMEOUT_S) * 1000,
      pollMs: POLL_MS,
      signal,
    });
    return { structured: { path: a.path, found: w.found, waited_ms: w.waitedMs, size: w.size } };
  },
});
