import { z } from 'zod';
import { ForkboxError } from '../../../../domain/errors.ts';
import { SIZES } from '../../../../domain/limits.ts';
import { nameSchema, refSchema } from '../../../bounds.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { createWithImage } from './images.ts';
import { portsArg, publishPorts } from './shapes.ts';
import { akTool } from './tool.ts';

/**
 * A named, persistent sandbox (kept until sandbox_remove, as agentkernel's were; no TTL until one is
 * set). `source_url`/`source_ref` cloned a git repository over the network: forkbox sandboxes have no
 * network in this toolset, so they are refused with what to do instead, never silently skipped.
 */
export const sandboxCreate = akTool({
  name: 'sandbox_create',
  title: 'Create a sandbox',
  description:
    "Create a persistent named sandbox for running multiple commands (kept until sandbox_remove). `image`: a local image name or a registry reference (default: forkbox's default image).",
  annotations: HINTS.create,
  input: z.object({
    name: nameSchema().describe('Name for the sandbox'),
    image: refSchema()
      .optional()
      .describe('Image: a local name or host/name:tag (default: the default image)'),
    ports: portsArg.optional(),
    source_url: z.string().max(SIZES.pathChars).optional().describe('Not available: refused (no network)'),
    source_ref: z.string().max(SIZES.pathChars).optional().describe('Not available: refused (no network)'),
  }),
  async run(a, { api }) {
    if (a.source_url !== undefined || a.source_ref !== undefined) {
      throw new ForkboxError(
        'invalid_argument',
        'source_url/source_ref need network access, which sandboxes of the agentkernel toolset do not have: create the sandbox without them and write the files with sandbox_file_write.',
      );
    }
    const sb = await createWithImage(api, {
      name: a.name,
      persistent: true,
      ...(a.image === undefined ? {} : { image: a.image }),
    });
    try {
      if (a.ports) await publishPorts(api, sb.id, a.ports);
    } catch (e) {
      await api.killSandbox(sb.id).catch(() => undefined);
      throw e;
    }
    const ports = a.ports?.length ? ` with ports ${a.ports.join(', ')}` : '';
    return `Sandbox '${a.name}' created and started with image '${sb.image}'${ports}`;
  },
});
