import { z } from 'zod';
import { ForkboxError } from '../../../../domain/errors.ts';
import { COMPAT_LIMITS } from '../../../../domain/limits.ts';
import { boundedNumber, pathSchema, refSchema } from '../../../bounds.ts';
import { envArg } from '../../kit/kv-list.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { createWithImage } from './images.ts';
import { commandArg, commandOutput, portsArg, publishPorts } from './shapes.ts';
import { akTool } from './tool.ts';

/**
 * An ephemeral sandbox: created (from `image`, else the default image), the command run as argv, the
 * sandbox removed, the output returned. `fast` chose agentkernel's pre-warmed pool (which ignored
 * `image`); forkbox's create is fast either way, so `image` is always used. `profile` and
 * `compatibility_mode` chose agentkernel's permission presets: forkbox's isolation does not vary, they are
 * ignored. `network: true` is refused: forkbox's egress is an allow list of names (the canonical
 * toolset's `network`), which a boolean cannot say.
 */
export const sandboxRun = akTool({
  name: 'sandbox_run',
  title: 'Run in a temporary sandbox',
  description:
    "Run a command in an isolated, temporary sandbox and return its output (stdout then stderr; a non-zero exit is an error carrying the output). `image` is a local image name or a registry reference (default: forkbox's default image, with Python and Node). fast, profile and compatibility_mode are accepted and ignored.",
  annotations: HINTS.run,
  input: z.object({
    command: commandArg,
    image: refSchema()
      .optional()
      .describe('Image: a local name or host/name:tag (default: the default image)'),
    fast: z.boolean().default(true).describe('Accepted; forkbox has no separate pool path'),
    cwd: pathSchema().optional().describe('Working directory inside the sandbox'),
    env: envArg
      .optional()
      .describe('Environment variables to set: {"KEY": "value"} as agentkernel took them, or ["KEY=value"]'),
    timeout_ms: boundedNumber(COMPAT_LIMITS.agentkernelTimeoutMs)
      .default(30000)
      .describe('Timeout in milliseconds'),
    profile: z
      .enum(['permissive', 'moderate', 'restrictive'])
      .default('moderate')
      .describe('Accepted and ignored: forkbox sandboxes have one isolation'),
    network: z.boolean().optional().describe('Only false: forkbox sandboxes have no network here'),
    compatibility_mode: z
      .enum(['native', 'claude', 'codex', 'gemini'])
      .default('native')
      .describe('Accepted and ignored'),
    ports: portsArg.optional(),
  }),
  async run(a, { api, signal, outputBytes }) {
    if (a.network === true) {
      throw new ForkboxError(
        'invalid_argument',
        "network: true is not available in the agentkernel toolset: forkbox's egress is an allow list of host names. Use forkbox's own toolset (sandbox_create with network 'allow:<names>').",
      );
    }
    const sb = await createWithImage(api, a.image === undefined ? {} : { image: a.image });
    try {
      if (a.ports) await publishPorts(api, sb.id, a.ports);
      const r = await api.exec(
        sb.id,
        {
          argv: a.command,
          timeoutSeconds: a.timeout_ms / 1000,
          maxOutputBytes: outputBytes,
          ...(a.cwd === undefined ? {} : { cwd: a.cwd }),
          ...(a.env === undefined ? {} : { env: a.env }),
        },
        { signal },
      );
      return commandOutput(r);
    } finally {
      await api.killSandbox(sb.id).catch(() => undefined);
    }
  },
});
