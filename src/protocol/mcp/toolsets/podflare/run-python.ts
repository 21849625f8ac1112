import { z } from 'zod';
import { SIZES } from '../../../../domain/limits.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { podflareErrorText } from './errors.ts';
import { sandboxIdArg } from './shapes.ts';

/** Podflare's tool-call timeout ("5-minute default"). */
export const PODFLARE_TIMEOUT_S = 300;

/**
 * The session sandbox's persistent Python REPL (forkbox's, as code_run). Podflare's REPL ran code in a
 * shared globals dict and reported what it printed; an uncaught exception's traceback went to stderr
 * and made exit_code 1, with the REPL (and its state) kept. The value of a last expression is not
 * printed, as there.
 */
export const runPython = compatTool(
  {
    name: 'run_python',
    title: 'Run Python',
    description:
      'Execute a Python snippet in the sandbox. State persists across calls (variables, imports, open files: REPL semantics). Returns {stdout, stderr, exit_code}.',
    annotations: HINTS.run,
    input: z.object({
      code: z.string().min(1).max(SIZES.codeChars).describe('Python source'),
      sandbox_id: sandboxIdArg,
    }),
    async run(a, { api, sandbox, signal, outputBytes }) {
      const id = await sandbox(a.sandbox_id);
      const r = await api.runCode(
        id,
        { code: a.code, timeoutSeconds: PODFLARE_TIMEOUT_S, maxOutputBytes: outputBytes },
        { signal },
      );
      let stderr = r.stderr;
      if (r.error && !stderr.includes(r.error.traceback)) stderr += r.error.traceback;
      if (r.timedOut) stderr += `\n[timed out after ${PODFLARE_TIMEOUT_S} s: KeyboardInterrupt]\n`;
      return { stdout: r.stdout, stderr, exit_code: r.ok ? 0 : 1 };
    },
  },
  podflareErrorText,
);
