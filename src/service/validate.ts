/**
 * Semantic validation of API requests against the bounds of domain/limits.ts (the same bounds the MCP
 * and REST schemas are derived from). Transports validate shapes; this validates meaning.
 */
import { errors, ForkboxError } from '../domain/errors.ts';
import {
  AGENT_BOUNDS,
  type Bound,
  describeBound,
  ENV_NAME_RE,
  LIMITS,
  NAME_RE,
  SIZES,
  withinBound,
} from '../domain/limits.ts';
import { RUNTIME_NAMES, type RuntimeName } from '../domain/runtime-id.ts';
import { DEFAULT_LIMITS, type Limits } from '../domain/types.ts';
import type { CodeRunRequest, CreateSandboxRequest, ExecRequest, TtySize } from './api.ts';
import { type DiskPolicy, diskLimitsFrom } from './sandboxes/disk-limits.ts';
import { isRuntimeName } from './sandboxes/runtime-choice.ts';

/** Inline output per stream when a request names none (the agent's default too: domain/limits.ts). */
export const DEFAULT_OUTPUT_BYTES = AGENT_BOUNDS.defaultOutputBytes;
/**
 * Spool file per stream of an exec, inside the sandbox: the daemon's default (LIMITS.spoolBytes bounds a
 * call). The default is also held to a sixteenth of the sandbox's disk limit (spoolDefaultFor), so a few
 * floods cannot fill the sandbox's disk with spool files.
 */
export const DEFAULT_SPOOL_BYTES = 256 * 1024 * 1024;
/** Part of a sandbox's disk limit one stream's spool file may take by default. */
export const SPOOL_DISK_SHARE = 16;

/** The default spool size of one stream in a sandbox with disk limit `diskBytes` (0 = not limited). */
export function spoolDefaultFor(daemonDefault: number, diskBytes: number): number {
  return diskBytes > 0 ? Math.min(daemonDefault, Math.floor(diskBytes / SPOOL_DISK_SHARE)) : daemonDefault;
}

/** `v` when it is within the bound; else an invalid_argument naming the field and the range. */
export function checkBound(b: Bound, v: number): number {
  if (!withinBound(b, v)) {
    throw errors.invalid(`${b.field} must be ${describeBound(b)} (got ${v}).`, { [b.field]: v });
  }
  return v;
}

const optional = (b: Bound, v: number | undefined) => (v === undefined ? undefined : checkBound(b, v));

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
        : checkBound(LIMITS.memoryMb, req.memoryMb) * 1024 * 1024,
    pids: req.pids === undefined ? DEFAULT_LIMITS.pids : checkBound(LIMITS.pids, req.pids),
    cpus: req.cpus === undefined ? DEFAULT_LIMITS.cpus : checkBound(LIMITS.cpus, req.cpus),
  };
}

export function checkName(name: string): string {
  if (typeof name !== 'string' || !NAME_RE.test(name)) {
    throw errors.invalid(
      `sandbox name '${String(name)}' is not valid: use 1-${SIZES.nameChars} letters, digits, '.', '_' or '-', starting with a letter or digit.`,
    );
  }
  return name;
}

export function checkTtl(ttl: number | undefined): number | undefined {
  return optional(LIMITS.ttlSeconds, ttl);
}

/** What a daemon without the runtime `name` says to do about it. */
const RUNTIME_SETUP: Record<RuntimeName, string> = {
  native:
    'the native runtime needs root and the host setup: run `npm run setup` as root, then restart the daemon.',
  gvisor:
    "the gvisor runtime needs runsc: run `npm run setup` as root (it installs runsc from Debian's backports), then restart the daemon.",
};

/**
 * A create's runtime (absent: the daemon's default): one of RUNTIME_NAMES (else invalid_argument) that
 * this daemon offers (else unavailable, saying what to do).
 */
export function checkRuntime(asked: unknown, offered: readonly RuntimeName[]): RuntimeName | undefined {
  if (asked === undefined) return undefined;
  if (!isRuntimeName(asked))
    throw errors.invalid(
      `runtime '${String(asked).slice(0, 64)}' is not one of ${RUNTIME_NAMES.join(', ')}.`,
      { runtime: String(asked).slice(0, 64) },
    );
  if (!offered.includes(asked))
    throw new ForkboxError(
      'unavailable',
      `this daemon has no ${asked} runtime (it has: ${offered.join(', ') || 'none'}); ${RUNTIME_SETUP[asked]}`,
      { runtime: asked, runtimes: [...offered] },
    );
  return asked;
}

/** The number of children of a fork or restore (default 1). */
export function checkForkCount(n: number | undefined): number {
  return checkBound(LIMITS.forkChildren, n ?? 1);
}

export function checkEnv(env: Record<string, string> | undefined): Record<string, string> {
  const entries = Object.entries(env ?? {});
  if (entries.length > SIZES.envVars)
    throw errors.invalid(`give at most ${SIZES.envVars} environment variables (got ${entries.length}).`);
  const out: Record<string, string> = {};
  for (const [k, v] of entries) {
    if (!ENV_NAME_RE.test(k) || k.length > SIZES.envNameChars)
      throw errors.invalid(`environment variable name '${k.slice(0, 64)}' is not valid.`);
    if (typeof v !== 'string' || v.includes('\0') || v.length > SIZES.envValueChars)
      throw errors.invalid(
        `environment variable '${k}' must be a string of at most ${SIZES.envValueChars} characters without NUL bytes.`,
      );
    out[k] = v;
  }
  return out;
}

export function checkLabels(labels: Record<string, string> | undefined): Record<string, string> {
  const entries = Object.entries(labels ?? {});
  if (entries.length > SIZES.labels)
    throw errors.invalid(`give at most ${SIZES.labels} labels (got ${entries.length}).`);
  for (const [k, v] of entries) {
    if (
      k.length === 0 ||
      k.length > SIZES.labelKeyChars ||
      typeof v !== 'string' ||
      v.length > SIZES.labelValueChars
    )
      throw errors.invalid(
        `label '${k.slice(0, 64)}' is not valid: keys have 1-${SIZES.labelKeyChars} characters, values at most ${SIZES.labelValueChars}.`,
      );
  }
  return Object.fromEntries(entries);
}

/** Timeout and output cap of an exec or a code run. */
export function checkRunBounds(req: Pick<CodeRunRequest, 'timeoutSeconds' | 'maxOutputBytes'>): void {
  optional(LIMITS.timeoutSeconds, req.timeoutSeconds);
  optional(LIMITS.maxOutputBytes, req.maxOutputBytes);
}

/** A terminal size within its bounds. */
export function checkTty(size: TtySize): TtySize {
  checkBound(LIMITS.ttyRows, size.rows);
  checkBound(LIMITS.ttyCols, size.cols);
  return size;
}

export function checkExec(req: Omit<ExecRequest, 'stdin'>): { argv?: string[]; cmd?: string } {
  const hasArgv = req.argv !== undefined && req.argv.length > 0;
  const hasCmd = typeof req.cmd === 'string' && req.cmd.length > 0;
  if (hasArgv === hasCmd)
    throw errors.invalid('give exactly one of argv (a list of strings) or cmd (a shell command string).');
  checkRunBounds(req);
  optional(LIMITS.spoolBytes, req.spoolBytes);
  if (req.tty !== undefined) checkTty(req.tty);
  if (hasArgv) {
    const argv = req.argv as string[];
    if (argv.length > SIZES.argvEntries || argv.some((a) => a.length > SIZES.argChars))
      throw errors.invalid(
        `argv may have ${SIZES.argvEntries} entries of at most ${SIZES.argChars} characters each.`,
      );
    for (const a of argv)
      if (a.includes('\0')) throw errors.invalid('argv entries must not contain NUL bytes.');
    return { argv };
  }
  if ((req.cmd as string).length > SIZES.cmdChars)
    throw errors.invalid(`cmd may have at most ${SIZES.cmdChars} characters.`);
  return { cmd: req.cmd as string };
}

export function checkPath(path: string): string {
  if (typeof path !== 'string' || path.length === 0 || path.length > SIZES.pathChars || path.includes('\0')) {
    throw errors.invalid(
      `path must be a non-empty string up to ${SIZES.pathChars} characters without NUL bytes.`,
    );
  }
  return path.startsWith('/') ? path : `/${path}`;
}
