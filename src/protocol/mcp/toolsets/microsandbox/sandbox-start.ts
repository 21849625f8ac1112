import { z } from 'zod';
import { ForkboxError, isForkboxError } from '../../../../domain/errors.ts';
import { LIMITS } from '../../../../domain/limits.ts';
import type { ForkboxApi, SandboxInfo } from '../../../../service/api.ts';
import { boundedNumber, refSchema } from '../../../bounds.ts';
import { envArg } from '../../kit/kv-list.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { createWithImage } from '../agentkernel/images.ts';
import { portsArg, publishPorts } from '../agentkernel/shapes.ts';
import { namespaceArg, sandboxArg, sandboxRef } from './shapes.ts';
import { msbTool } from './tool.ts';

/** microsandbox's two images: both are forkbox's default image, which has Python and Node. */
const MSB_IMAGES: ReadonlySet<string> = new Set(['microsandbox/python', 'microsandbox/node']);

const configArg = z
  .object({
    image: refSchema()
      .optional()
      .describe(
        "microsandbox/python or microsandbox/node (both: forkbox's default image, with Python and Node), or a forkbox image",
      ),
    memory: boundedNumber(LIMITS.memoryMb).optional().describe('Memory limit in MiB'),
    cpus: boundedNumber(LIMITS.cpus).optional().describe('Number of CPUs'),
    volumes: z.array(z.string().max(4096)).max(64).optional().describe('Not available: refused'),
    ports: portsArg.optional(),
    envs: envArg.optional().describe('Environment variables as KEY=VALUE'),
  })
  .describe('Sandbox configuration');

/** The live sandbox of that name in that namespace, if there is one. */
async function existing(api: ForkboxApi, ref: string): Promise<SandboxInfo | undefined> {
  try {
    const sb = await api.getSandbox(ref);
    return sb.state === 'running' || sb.state === 'paused' ? sb : undefined;
  } catch (e) {
    if (isForkboxError(e) && e.code === 'not_found') return undefined;
    throw e;
  }
}

/**
 * A named sandbox in a namespace, kept until sandbox_stop (microsandbox's ran until stopped). Starting a
 * name that is already running answers as a fresh start did (microsandbox's `up` was idempotent); a
 * paused one is resumed. `volumes` mounted host paths: refused, never silently dropped.
 */
export const sandboxStart = msbTool({
  name: 'sandbox_start',
  title: 'Start a sandbox',
  description:
    "Start a new sandbox with specified configuration. This creates an isolated environment for code execution. IMPORTANT: Always stop the sandbox when done (sandbox_stop). Images 'microsandbox/python' and 'microsandbox/node' are both forkbox's default image, which has Python and Node.js.",
  annotations: HINTS.create,
  input: z.object({
    sandbox: sandboxArg.describe('Name of the sandbox to start'),
    namespace: namespaceArg.describe('Namespace for the sandbox'),
    config: configArg.optional(),
  }),
  async run(a, { api }) {
    const c = a.config ?? {};
    if (c.volumes?.length) {
      throw new ForkboxError(
        'invalid_argument',
        "volumes are not available: forkbox sandboxes do not mount host paths through this toolset. Start the sandbox without them and copy files in with sandbox_run_command, or ask the host's operator for a project directory.",
      );
    }
    const done = `Sandbox ${a.sandbox} started successfully`;
    const found = await existing(api, sandboxRef(a));
    if (found) {
      if (found.state === 'paused') await api.resumeSandbox(found.id);
      return done;
    }
    const image = c.image === undefined || MSB_IMAGES.has(c.image) ? undefined : c.image;
    const sb = await createWithImage(api, {
      name: a.sandbox,
      namespace: a.namespace,
      persistent: true,
      ...(image === undefined ? {} : { image }),
      ...(c.memory === undefined ? {} : { memoryMb: c.memory }),
      ...(c.cpus === undefined ? {} : { cpus: c.cpus }),
      ...(c.envs === undefined ? {} : { env: c.envs }),
    });
    try {
      if (c.ports?.length) await publishPorts(api, sb.id, c.ports);
    } catch (e) {
      await api.killSandbox(sb.id).catch(() => undefined);
      throw e;
    }
    return done;
  },
});
