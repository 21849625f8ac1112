import { z } from 'zod';
import { LIMITS, PORTS, SIZES } from '../../../domain/limits.ts';
import { RUNTIME_NAMES } from '../../../domain/runtime-id.ts';
import type { CreateSandboxRequest, ProgressEvent } from '../../../service/api.ts';
import { boundedNumber, nameSchema } from '../../bounds.ts';
import { envArg, labelsArg } from '../kit/kv-list.ts';
import { progressEventText } from '../kit/progress.ts';
import { sandboxOut, sandboxShape } from '../kit/shapes.ts';
import { defineTool, diskInodesArg, diskMbArg, HINTS } from '../kit/tool-kit.ts';

export const sandboxCreate = defineTool({
  name: 'sandbox_create',
  title: 'Create sandbox',
  description:
    'Create another sandbox (own files, processes, Python REPL); pass its id as `sandbox`. Only for more sandboxes or other limits: tools make your default one on first use. Ends with your session unless persistent.',
  annotations: HINTS.create,
  input: z.object({
    image: z.string().min(1).max(128).optional().describe('Image (default debian; see image_list)'),
    name: nameSchema().optional().describe('Unique name (usable as id)'),
    memory_mb: boundedNumber(LIMITS.memoryMb).optional().describe('Memory limit, MiB (default 1024)'),
    cpus: boundedNumber(LIMITS.cpus).optional().describe('CPU quota (default 1)'),
    pids: boundedNumber(LIMITS.pids).optional().describe('Process limit (default 512)'),
    disk_mb: diskMbArg.describe('Disk limit, MiB (default 10240)'),
    disk_inodes: diskInodesArg,
    ttl_s: boundedNumber(LIMITS.ttlSeconds).optional().describe('Seconds to live'),
    env: envArg.optional().describe('Env of its commands, NAME=value'),
    labels: labelsArg.optional().describe('Labels, NAME=value'),
    persistent: z.boolean().optional().describe('Keep it after your session ends'),
    template: nameSchema().optional().describe('Template (see template_list)'),
    network: z.string().max(SIZES.networkChars).optional().describe('none|open|allow:host,*.suffix,CIDR'),
    project: z
      .string()
      .max(2 * SIZES.pathChars)
      .optional()
      .describe('Host dir at /work, or DIR:/path'),
    ports: z.array(boundedNumber(LIMITS.port)).max(PORTS.perSandbox).optional().describe('Ports to publish'),
    runtime: z
      .enum(RUNTIME_NAMES)
      .optional()
      .describe(
        'native (default: millisecond forks of files and the Python REPL) or gvisor (forks carry every running process)',
      ),
  }),
  output: sandboxShape,
  async run(a, { api, progress }) {
    const req: CreateSandboxRequest = {};
    if (a.image !== undefined) req.image = a.image;
    if (a.name !== undefined) req.name = a.name;
    if (a.memory_mb !== undefined) req.memoryMb = a.memory_mb;
    if (a.cpus !== undefined) req.cpus = a.cpus;
    if (a.pids !== undefined) req.pids = a.pids;
    if (a.disk_mb !== undefined) req.diskMb = a.disk_mb;
    if (a.disk_inodes !== undefined) req.diskInodes = a.disk_inodes;
    if (a.ttl_s !== undefined) req.ttlSeconds = a.ttl_s;
    if (a.env !== undefined) req.env = a.env;
    if (a.labels !== undefined) req.labels = a.labels;
    if (a.template !== undefined) req.template = a.template;
    if (a.network !== undefined) req.network = a.network;
    if (a.project !== undefined) req.project = a.project;
    if (a.ports !== undefined) req.ports = a.ports;
    if (a.runtime !== undefined) req.runtime = a.runtime;
    // The engine ties a non-persistent sandbox to the caller's client session (when there is one).
    if (a.persistent === true) req.persistent = true;
    // An image pulled on first use reports its phases and bytes as progress notifications.
    const onProgress = (e: ProgressEvent) => progress(`pulling ${a.image}: ${progressEventText(e)}`);
    return { structured: sandboxOut(await api.createSandbox(req, { onProgress })) };
  },
});
