import { z } from 'zod';
import { LIMITS, SIZES } from '../../../../domain/limits.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { lines, namespaceArg, sandboxArg, sandboxRef } from './shapes.ts';
import { msbTool } from './tool.ts';

/**
 * `command` with `args` as argv (never a shell), as microsandbox's portal ran it. The result is the
 * portal's `{command, args, exit_code, success, output: [{stream, text}]}` (stdout's lines, then
 * stderr's); a non-zero exit is a result, not an error, as there. A command killed by a signal or the
 * timeout has exit_code -1. No timeout in microsandbox's tool: forkbox's longest.
 */
export const sandboxRunCommand = msbTool({
  name: 'sandbox_run_command',
  title: 'Run a command',
  description:
    'Execute a command (with its arguments as a list; no shell) in a running sandbox. PREREQUISITES: the sandbox must be started first with sandbox_start. For a shell line use command "sh" with args ["-c", "…"].',
  annotations: HINTS.run,
  input: z.object({
    sandbox: sandboxArg.describe('Name of the sandbox (must be already started)'),
    namespace: namespaceArg,
    command: z.string().min(1).max(SIZES.argChars).describe('Command to execute'),
    args: z
      .array(z.string().max(SIZES.argChars))
      .max(SIZES.argvEntries - 1)
      .optional()
      .describe('Command arguments'),
  }),
  async run(a, { api, signal, outputBytes }) {
    const args = a.args ?? [];
    const r = await api.exec(
      sandboxRef(a),
      { argv: [a.command, ...args], timeoutSeconds: LIMITS.timeoutSeconds.max, maxOutputBytes: outputBytes },
      { signal },
    );
    const exitCode = r.exitCode ?? -1;
    return {
      command: a.command,
      args,
      exit_code: exitCode,
      success: exitCode === 0,
      output: [...lines('stdout', r.stdout), ...lines('stderr', r.stderr)],
    };
  },
});
