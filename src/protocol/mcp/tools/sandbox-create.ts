import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';
import type { CreateSandboxRequest } from '../../../service/api.ts';
import { boundedNumber, labelsSchema, nameSchema } from '../../bounds.ts';
import { sandboxOut, sandboxShape } from '../shapes.ts';
import { defineTool, diskInodesArg, diskMbArg, envArg, HINTS } from '../tool-kit.ts';

export const sandboxCreate = defineTool({
  name: 'sandbox_create',
  title: 'Create a sandbox',
  description:
    'Create a new isolated Linux sandbox (its own filesystem, processes and persistent Python REPL; no network). Returns its id; pass it (or its name) as `sandbox` to the other tools. You only need this for a second sandbox or non-default limits: the other tools create a default sandbox on first use. Unless `persistent` is true, the sandbox is removed when this connection/session ends; `ttl_s` reaps it after that many seconds in any case.',
  annotations: HINTS.create,
  input: z.object({
    image: z.string().min(1).max(128).optional().describe("Image name (default 'debian'; see image_list)."),
    name: nameSchema().optional().describe('Unique name usable instead of the id.'),
    memory_mb: boundedNumber(LIMITS.memoryMb).optional().describe('Hard memory limit, MiB (default 1024).'),
    cpus: boundedNumber(LIMITS.cpus).optional().describe('CPU quota in CPUs (default 1).'),
    pids: boundedNumber(LIMITS.pids).optional().describe('Max processes/threads (default 512).'),
    disk_mb: diskMbArg.describe(
      'Disk limit, MiB, on what the sandbox writes; past it writes fail with ENOSPC/EDQUOT (default 10240).',
    ),
    disk_inodes: diskInodesArg,
    ttl_s: boundedNumber(LIMITS.ttlSeconds)
      .optional()
      .describe('Kill the sandbox after this many seconds (extend with sandbox_extend).'),
    env: envArg.describe('Environment for every command in the sandbox.'),
    labels: labelsSchema().optional(),
    persistent: z
      .boolean()
      .optional()
      .describe('Keep the sandbox after this connection/session ends (default false).'),
    template: nameSchema()
      .optional()
      .describe(
        "Template to start from (see template_list; default 'default'): its image, with its Python modules already imported in the REPL. Give `image` only if it is the template's.",
      ),
  }),
  output: sandboxShape,
  async run(a, { api }) {
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
    // The engine ties a non-persistent sandbox to the caller's client session (when there is one).
    if (a.persistent === true) req.persistent = true;
    return { structured: sandboxOut(await api.createSandbox(req)) };
  },
});
