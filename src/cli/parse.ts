/** Parsing of CLI argument values: sizes, durations, K=V pairs and `ID:/path` operands. Pure functions. */

import { parseDuration } from '../domain/durations.ts';
import { ForkboxError } from '../domain/errors.ts';
import { describeBound, LIMITS, withinBound } from '../domain/limits.ts';
import { RUNTIME_NAMES, type RuntimeName } from '../domain/runtime-id.ts';
import { parseSize } from '../domain/sizes.ts';

export { parseSize } from '../domain/sizes.ts';

/** A size as whole MiB (rounded up), for CreateSandboxRequest.memoryMb. */
export function parseSizeMb(text: string): number {
  return Math.ceil(parseSize(text) / (1024 * 1024));
}

export { parseDuration } from '../domain/durations.ts';

/** A duration as whole seconds (rounded up), for TTLs. */
export function parseDurationSeconds(text: string): number {
  return Math.ceil(parseDuration(text));
}

/** `KEY=VALUE` (the value may contain `=` and be empty). */
/** A warm pool size (`--pool`): a whole number within LIMITS.pool. */
export function parsePoolSize(text: string): number {
  const n = Number(text);
  if (!/^\d{1,3}$/.test(text) || !withinBound(LIMITS.pool, n))
    throw new ForkboxError(
      'invalid_argument',
      `--pool '${text.slice(0, 20)}' must be ${describeBound(LIMITS.pool)} (0 = no pool).`,
    );
  return n;
}

/** `--runtime`: one of RUNTIME_NAMES. */
export function parseRuntimeName(v: string): RuntimeName {
  const name = RUNTIME_NAMES.find((n) => n === v);
  if (name === undefined)
    throw new ForkboxError(
      'invalid_argument',
      `--runtime must be ${RUNTIME_NAMES.join(' or ')}, not '${v.slice(0, 20)}'.`,
    );
  return name;
}

/** A port number, 1 to 65535 (the engine checks the range again). */
export function parsePort(text: string): number {
  if (!/^\d{1,5}$/.test(text))
    throw new ForkboxError(
      'invalid_argument',
      `'${text.slice(0, 20)}' is not a port: give a number from 1 to 65535.`,
    );
  return Number(text);
}

/** A REPL language for `forkbox eval`: python, node (or microsandbox's nodejs). */
export function parseReplLanguage(text: string): 'python' | 'node' {
  if (text === 'python') return 'python';
  if (text === 'node' || text === 'nodejs') return 'node';
  throw new ForkboxError(
    'invalid_argument',
    `'${text.slice(0, 20)}' is not a REPL language: give python or node.`,
  );
}

export function parseKeyValue(text: string, what = 'value'): [string, string] {
  const i = text.indexOf('=');
  if (i <= 0) {
    throw new ForkboxError('invalid_argument', `${what} '${text}' must be written KEY=VALUE.`);
  }
  return [text.slice(0, i), text.slice(i + 1)];
}

/** Fold repeated `K=V` options into a record (commander's collect-style parser). */
export function collectKeyValue(what: string) {
  return (text: string, prev: Record<string, string> | undefined): Record<string, string> => {
    const [k, v] = parseKeyValue(text, what);
    return { ...(prev ?? {}), [k]: v };
  };
}

export type CpOperand = { kind: 'host'; path: string } | { kind: 'sandbox'; sandbox: string; path: string };

/**
 * `ID:/path` names a path in a sandbox; anything else is a host path. A host path containing ':' before
 * any '/' must be written with a './' prefix (`./a:b`). Sandbox paths are absolute (a relative one is
 * taken from '/').
 */
export function parseCpOperand(text: string): CpOperand {
  const m = /^([A-Za-z0-9][A-Za-z0-9_.-]*):(.*)$/s.exec(text);
  if (!m) return { kind: 'host', path: text };
  const rest = m[2] ?? '';
  return { kind: 'sandbox', sandbox: m[1] ?? '', path: rest.startsWith('/') ? rest : `/${rest}` };
}

/** The CLI's exit status for a finished command, shell-style: its code, or 128+signal when killed. */
export function execExitStatus(o: {
  exitCode: number | null;
  signal: number | null;
  timedOut: boolean;
}): number {
  if (o.exitCode !== null) return o.exitCode;
  if (o.signal !== null) return 128 + o.signal;
  return o.timedOut ? 124 : 1;
}
