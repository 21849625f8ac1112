import { z } from 'zod';
import { LIMITS } from '../../../../domain/limits.ts';
import { pathSchema } from '../../../bounds.ts';
import { envArg } from '../../kit/kv-list.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { commandArg, commandOutput, nameArg } from './shapes.ts';
import { akTool } from './tool.ts';

/**
 * The command as argv in the named sandbox. `sudo` asked agentkernel's containers for root: forkbox runs
 * commands as the image's user (root in the default image, inside the sandbox's user namespace), so it
 * is accepted and changes nothing. agentkernel had no timeout here; forkbox's longest one applies.
 */
export const sandboxExec = akTool({
  name: 'sandbox_exec',
  title: 'Run a command',
  description:
    'Execute a command (argv, no shell) in a running sandbox: its output (stdout then stderr); a non-zero exit is an error carrying the output. For a shell line pass ["sh", "-c", "…"].',
  annotations: HINTS.run,
  input: z.object({
    name: nameArg,
    command: commandArg,
    env: envArg.optional().describe('Environment variables as KEY=VALUE pairs'),
    workdir: pathSchema().optional().describe('Working directory inside the sandbox'),
    sudo: z.boolean().optional().describe("Accepted: commands run as the image's user (root by default)"),
  }),
  async run(a, { api, signal, outputBytes }) {
    const r = await api.exec(
      a.name,
      {
        argv: a.command,
        timeoutSeconds: LIMITS.timeoutSeconds.max,
        maxOutputBytes: outputBytes,
        ...(a.env === undefined ? {} : { env: a.env }),
        ...(a.workdir === undefined ? {} : { cwd: a.workdir }),
      },
      { signal },
    );
    return commandOutput(r);
  },
});
