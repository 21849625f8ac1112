import { z } from 'zod';
import { SIZES } from '../../../../domain/limits.ts';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { forkdErrorText } from './errors.ts';
import { NUMPY_PRELUDE, sandboxIdArg } from './shapes.ts';

const TIMEOUT_S = 300;

/**
 * forkd evaluated an expression in its warm PID 1 (numpy imported). Here the code runs in the
 * sandbox's persistent Python REPL, after a two-line prelude that imports numpy if it is not yet; the
 * REPL takes statements too (`x = 1`), and the value of a last expression is `result`, as its repr.
 * Printed output is added as `stdout`/`stderr` when there is any (forkd's agent dropped it).
 */
export const evalCode = compatTool(
  {
    name: 'eval_code',
    title: 'Evaluate Python',
    description:
      "Evaluate Python in the sandbox's persistent interpreter (numpy imported; variables kept, and inherited by branches): {result (repr of the last expression), error, exit_code}.",
    annotations: HINTS.run,
    input: z.object({
      sandbox_id: sandboxIdArg,
      code: z
        .string()
        .min(1)
        .max(SIZES.codeChars - NUMPY_PRELUDE.length)
        .describe('Python expression or statements'),
    }),
    async run(a, { api, signal, outputBytes }) {
      const r = await api.runCode(
        a.sandbox_id,
        { code: NUMPY_PRELUDE + a.code, timeoutSeconds: TIMEOUT_S, maxOutputBytes: outputBytes },
        { signal },
      );
      const error = r.error
        ? `${r.error.type}: ${r.error.message}`
        : r.timedOut
          ? `timed out after ${TIMEOUT_S} s`
          : null;
      return {
        result: r.value,
        error,
        exit_code: r.ok ? 0 : 1,
        ...(r.stdout === '' ? {} : { stdout: r.stdout }),
        ...(r.stderr === '' ? {} : { stderr: r.stderr }),
      };
    },
  },
  forkdErrorText,
);
