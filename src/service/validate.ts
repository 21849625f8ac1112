/** Semantic validation of API requests (ranges, formats). Transports validate shapes; this validates meaning. */
import { errors } from '../domain/errors.ts';
import { DEFAULT_LIMITS, type Limits } from '../domain/types.ts';
import type { CreateSandboxRequest, ExecRequest } from './api.ts';
import { type DiskPolicy, diskLimitsFrom } from './disk-limits.ts';

export const MAX_TTL_SECONDS = 30 * 24 * 3600;
export const MAX_EXEC_TIMEOUT_SECONDS = 24 * 3600;
export const MAX_OUTPUT_BYTES = 64 * 1024 * 1024;
export const DEFAULT_OUTPUT_BYTES = 1024 * 1024;
/** Spool file per stream of an exec, inside the sandbox: the daemon's default and the most a call may ask. */
export const DEFAULT_SPOOL_BYTES = 64 * 1024 * 1024;
export const MAX_SPOOL_BYTES = 4 * 1024 * 1024 * 1024;
export const MAX_FILE_BYTES = 64 * 1024 * 1024;
const NAME_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/;

function intIn(name: string, v: number, min: number, max: number): number {
  if (!Number.isFinite(v) || v < min || v > max) {
    throw errors.invalid(`${name} must be between ${min} and ${max} (got ${v}).`, { [name]: v });
  }
  return v;
}

/** The limit fields of a create or fork request (absent or undefined: the default). */
export type LimitRequest = {
  [K in 'memoryMb' | 'cpus' | 'pids' | 'diskMb' | 'diskInodes']?: CreateSandboxRequest[K] | undefined;
};

export function limitsFrom(req: LimitRequest, disk?: DiskPolicy): Limits {
  return {
    ...diskLimitsFrom(req, disk),
    memoryBytes:
      req.memoryMb === undefined
        ? DEFAULT_LIMITS.memoryBytes
        : intIn('memory_mb', req.memoryMb, 16, 1024 * 1024) * 1024 * 1024,
    pids: req.pids === undefined ? DEFAULT_LIMITS.pids : intIn('pids', req.pids, 8, 65536),
    cpus: req.cpus === undefined ? DEFAULT_LIMITS.cpus : intIn('cpus', req.cpus, 0.01, 1024),
  };
}

export function checkName(name: string): string {
  if (!NAME_RE.test(name)) {
    throw errors.invalid(
      `sandbox name '${name}' is not valid: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit.`,
    );
  }
  return name;
}

export function checkTtl(ttl: number | undefined): number | undefined {
  return ttl === undefined ? undefined : intIn('ttl_seconds', ttl, 1, MAX_TTL_SECONDS);
}

export function checkEnv(env: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
      throw errors.invalid(`environment variable name '${k}' is not valid.`);
    if (typeof v !== 'string' || v.includes('\0'))
      throw errors.invalid(`environment variable '${k}' must be a string without NUL bytes.`);
    out[k] = v;
  }
  return out;
}

export function checkExec(req: Omit<ExecRequest, 'stdin'>): { argv?: string[]; cmd?: string } {
  const hasArgv = req.argv !== undefined && req.argv.length > 0;
  const hasCmd = typeof req.cmd === 'string' && req.cmd.length > 0;
  if (hasArgv === hasCmd)
    throw errors.invalid('give exactly one of argv (a list of strings) or cmd (a shell command string).');
  if (req.timeoutSeconds !== undefined)
    intIn('timeout_seconds', req.timeoutSeconds, 0, MAX_EXEC_TIMEOUT_SECONDS);
  if (req.maxOutputBytes !== undefined) intIn('max_output_bytes', req.maxOutputBytes, 0, MAX_OUTPUT_BYTES);
  if (req.spoolBytes !== undefined) intIn('spool_bytes', req.spoolBytes, 0, MAX_SPOOL_BYTES);
  if (hasArgv) {
    for (const a of req.argv ?? [])
      if (a.includes('\0')) throw errors.invalid('argv entries must not contain NUL bytes.');
    return { argv: req.argv as string[] };
  }
  return { cmd: req.cmd as string };
}

export function checkPath(path: string): string {
  if (typeof path !== 'string' || path.length === 0 || path.length > 4096 || path.includes('\0')) {
    throw errors.invalid(`path must be a non-empty string up to 4096 characters without NUL bytes.`);
  }
  return path.startsWith('/') ? path : `/${path}`;
}
