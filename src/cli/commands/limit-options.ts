/**
 * Options shared by `create` and `run`: image, runtime, limits, environment; their create, showing a
 * pull's progress.
 */
import type { Command } from 'commander';
import { ForkboxError } from '../../domain/errors.ts';
import type { RuntimeName } from '../../domain/runtime-id.ts';
import { parseDiskSpec } from '../../domain/sizes.ts';
import type { CreateSandboxRequest, ForkboxApi, SandboxInfo } from '../../service/api.ts';
import { collectKeyValue, parseRuntimeName, parseSizeMb } from '../parse.ts';

export interface LimitOptions {
  image?: string;
  runtime?: RuntimeName;
  memory?: number;
  cpus?: number;
  pids?: number;
  disk?: { bytes: number; inodes?: number };
  env?: Record<string, string>;
}

function positive(what: string, integer: boolean) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
      throw new ForkboxError(
        'invalid_argument',
        `--${what} must be a positive ${integer ? 'integer' : 'number'}, not '${v}'.`,
      );
    }
    return n;
  };
}

export function addLimitOptions(cmd: Command): Command {
  return cmd
    .option(
      '--image <name|ref>',
      'image name, or a registry reference pulled on first use (default: the daemon default)',
    )
    .option(
      '--runtime <name>',
      'native (default: millisecond forks of files and the Python REPL) or gvisor (runsc: forks carry every running process)',
      parseRuntimeName,
    )
    .option('--memory <size>', 'memory limit, e.g. 512m, 2g (a bare number is MiB)', parseSizeMb)
    .option('--cpus <n>', 'CPU quota in CPUs, e.g. 0.5, 2', positive('cpus', false))
    .option('--pids <n>', 'maximum number of processes', positive('pids', true))
    .option(
      '--disk <size[,inodes]>',
      "disk limit on what the sandbox writes, e.g. 2g, or 2g,100k to bound files too (default: the daemon's)",
      parseDiskSpec,
    )
    .option('--env <K=V>', 'environment variable (repeatable)', collectKeyValue('--env'));
}

/** `--disk 2g,100k` → the request's diskMb / diskInodes. */
export function diskRequest(d: LimitOptions['disk']): Pick<CreateSandboxRequest, 'diskMb' | 'diskInodes'> {
  if (d === undefined) return {};
  const out: Pick<CreateSandboxRequest, 'diskMb' | 'diskInodes'> = { diskMb: Math.ceil(d.bytes / 2 ** 20) };
  if (d.inodes !== undefined) out.diskInodes = d.inodes;
  return out;
}

export function limitsToRequest(o: LimitOptions): CreateSandboxRequest {
  const req: CreateSandboxRequest = {};
  if (o.image !== undefined) req.image = o.image;
  if (o.runtime !== undefined) req.runtime = o.runtime;
  if (o.memory !== undefined) req.memoryMb = o.memory;
  if (o.cpus !== undefined) req.cpus = o.cpus;
  if (o.pids !== undefined) req.pids = o.pids;
  Object.assign(req, diskRequest(o.disk));
  if (o.env !== undefined) req.env = o.env;
  return req;
}

/**
 * Create; an image named by a registry reference (pulled on first use) shows the pull's progress on
 * stderr (the display is loaded only then: a plain create stays lean).
 */
export async function createShowingPull(
  api: Pick<ForkboxApi, 'createSandbox'>,
  req: CreateSandboxRequest,
): Promise<SandboxInfo> {
  if (!req.image?.includes('/')) return api.createSandbox(req);
  const { createProgressDisplay } = await import('../output/progress.ts');
  const progress = createProgressDisplay();
  try {
    return await api.createSandbox(req, { onProgress: (e) => progress.update(e) });
  } finally {
    progress.stop();
  }
}
