import { z } from 'zod';
import { LIMITS, SIZES } from '../../../../domain/limits.ts';
import { boundedNumber } from '../../../bounds.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { forkdErrorText } from './errors.ts';
import { sandboxIdArg } from './shapes.ts';

/**
 * An argv, never a shell string (as forkd's agent). Output beyond the server's inline bound per stream
 * is cut in the middle (the whole of it is in a file in the sandbox): `truncated: true` then says so.
 * A command killed at its timeout has exit_code -1 and `timed_out: true`.
 */
export const execCommand = compatTool(
  {
    name: 'exec_command',
    title: 'Run a command',
    description:
      'Run a command (argv list, no shell) in a sandbox and wait for it: {stdout, stderr, exit_code}. For a shell line pass ["sh", "-c", "…"].',
    annotations: HINTS.run,
    input: z.object({
      sandbox_id: sandboxIdArg,
      args: z
        .array(z.string().max(SIZES.argChars))
        .min(1)
        .max(SIZES.argvEntries)
        .describe('Command and arguments'),
      timeout_secs: boundedNumber(LIMITS.timeoutSeconds).default(30).describe('Killed after this'),
    }),
    async run(a, { api, signal, outputBytes }) {
      const r = await api.exec(
        a.sandbox_id,
        { argv: a.args, timeoutSeconds: a.timeout_secs, maxOutputBytes: outputBytes },
        { signal },
      );
      return {
        stdout: r.stdout,
        stderr: r.stderr,
        exit_code: r.exitCode ?? -1,
        ...(r.timedOut ? { timed_out: true } : {}),
        ...(r.truncated ? { truncated: true } : {}),
      };
    },
  },
  forkdErrorText,
);
