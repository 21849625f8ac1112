import { z } from 'zod';
import { pathSchema } from '../../../bounds.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { WAIT_MAX_S, waitForMarker } from '../../kit/wait-marker.ts';
import { forkdErrorText } from './errors.ts';
import { sandboxIdArg } from './shapes.ts';

const EXCERPT_BYTES = 256;

/**
 * forkd's MCP server polled `sh -c "tail -c 4096 {path}"` (the path pasted into a shell line). Here the
 * file is read through the agent (no shell, no command line: wait-marker.ts, shared with the canonical
 * wait_for_text), and last_excerpt is the file's last 256 bytes at the end of the wait.
 */
export const waitForText = compatTool(
  {
    name: 'wait_for_text',
    title: 'Wait for text',
    description:
      'Poll a file in the sandbox until it contains marker: {found, elapsed_ms, last_excerpt (its last 256 bytes)}.',
    annotations: HINTS.read,
    input: z.object({
      sandbox_id: sandboxIdArg,
      path: pathSchema().describe('Absolute path in the sandbox'),
      marker: z.string().min(1).max(4096).describe('Text to wait for'),
      timeout_secs: z.number().min(0).max(WAIT_MAX_S).default(60).describe('Give up after'),
      poll_interval_ms: z.number().int().min(10).max(60_000).default(200).describe('Between looks'),
    }),
    async run(a, { api, signal }) {
      const w = await waitForMarker(api, a.sandbox_id, {
        path: a.path,
        marker: a.marker,
        timeoutMs: a.timeout_secs * 1000,
        pollMs: a.poll_interval_ms,
        signal,
      });
      let excerpt = '';
      if (w.size !== null && w.size > 0) {
        const offset = Math.max(0, w.size - EXCERPT_BYTES);
        const r = await api
          .readFile(a.sandbox_id, a.path, { offset, length: EXCERPT_BYTES })
          .catch(() => null);
        excerpt = r === null ? '' : r.data.toString('utf8').replace(/^\uFFFD+/, '');
      }
      return { found: w.found, elapsed_ms: w.waitedMs, last_excerpt: excerpt };
    },
  },
  forkdErrorText,
);
