import { z } from 'zod';
import { SIZES } from '../../../../domain/limits.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { podflareErrorText } from './errors.ts';
import { PODFLARE_TIMEOUT_S } from './run-python.ts';
import { sandboxIdArg } from './shapes.ts';

/**
 * A fresh bash process per call (nothing but files carries to the next one), given the snippet as
 * bash's own argument (argv `["bash", "-c", code]`: the snippet is the program, nothing is pasted into
 * another command line).
 */
export const runBash = compatTool(
  {
    name: 'run_bash',
    title: 'Run bash',
    description:
      'Execute a bash snippet in the sandbox, in a fresh process each call (environment variables do not persist). Returns {stdout, stderr, exit_code}.',
    annotations: HINTS.run,
    input: z.object({
      code: z.string().min(1).max(SIZES.argChars).describe('bash source'),
      sandbox_id: sandboxIdArg,
    }),
    async run(a, { api, sandbox, signal, outputBytes }) {
      const id = await sandbox(a.sandbox_id);
      const r = await api.exec(
        id,
        { argv: ['bash', '-c', a.code], timeoutSeconds: PODFLARE_TIMEOUT_S, maxOutputBytes: outputBytes },
        { signal },
      );
      return {
        stdout: r.stdout,
        stderr: r.stderr,
        exit_code: r.exitCode ?? (r.signal === null ? -1 : 128 + r.signal),
      };
    },
  },
  podflareErrorText,
);
