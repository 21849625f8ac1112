import { z } from 'zod';
import { ForkboxError } from '../../../../domain/errors.ts';
import { LIMITS, SIZES } from '../../../../domain/limits.ts';
import type { CodeLanguage } from '../../../../service/api.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { lines, namespaceArg, sandboxArg, sandboxRef } from './shapes.ts';
import { msbTool } from './tool.ts';

/** The language names microsandbox's portal took, as forkbox's REPL languages. */
const LANGUAGES: Readonly<Record<string, CodeLanguage>> = {
  python: 'python',
  node: 'node',
  nodejs: 'node',
  javascript: 'node',
};

/**
 * The sandbox's persistent REPL of `language` (forkbox's Python or Node REPL, as code_run): variables
 * are kept between calls, as in microsandbox's portal, which kept one interpreter per language. The
 * result is the portal's `{status, language, output: [{stream, text}]}`: stdout's lines, then stderr's
 * (forkbox keeps the two streams apart, so their interleaving is not kept); an uncaught exception's
 * traceback is on stderr with `status` still `success`, as there. The value of a last expression is
 * added as a stdout line, as an interactive interpreter echoed it. No timeout in microsandbox's tool:
 * forkbox's longest.
 */
export const sandboxRunCode = msbTool({
  name: 'sandbox_run_code',
  title: 'Run code',
  description:
    'Execute code in a running sandbox (python or nodejs). Variables are kept between calls in the same sandbox and language. PREREQUISITES: the sandbox must be started first with sandbox_start.',
  annotations: HINTS.run,
  input: z.object({
    sandbox: sandboxArg.describe('Name of the sandbox (must be already started)'),
    namespace: namespaceArg,
    code: z.string().max(SIZES.codeChars).describe('Code to execute'),
    language: z.string().max(32).describe("Programming language ('python' or 'nodejs')"),
  }),
  async run(a, { api, signal, outputBytes }) {
    const language = LANGUAGES[a.language.toLowerCase()];
    if (!language) {
      throw new ForkboxError(
        'invalid_argument',
        `Unsupported language: ${a.language.slice(0, 32)}. Use 'python' or 'nodejs'.`,
      );
    }
    const r = await api.runCode(
      sandboxRef(a),
      { language, code: a.code, timeoutSeconds: LIMITS.timeoutSeconds.max, maxOutputBytes: outputBytes },
      { signal },
    );
    if (r.timedOut || r.oomKilled || r.cancelled) {
      const why = r.oomKilled ? 'ran out of memory' : r.timedOut ? 'timed out' : 'was cancelled';
      throw new ForkboxError('conflict', `REPL execution failed: the code ${why}.`);
    }
    let stderr = r.stderr;
    if (r.error && !stderr.includes(r.error.traceback)) stderr += r.error.traceback;
    const echoed = r.value !== null && r.value !== 'undefined' ? `${r.value}\n` : '';
    return {
      status: 'success',
      language: a.language,
      output: [...lines('stdout', r.stdout + echoed), ...lines('stderr', stderr)],
    };
  },
});
