/**
 * Which runtime makes a sandbox (domain/runtime-id.ts): the runtimes a create may name, the one it gets
 * when it names none, what each can do, and which one made a sandbox.
 */
import { RUNTIME_NAMES, type RuntimeName, runtimeKind } from '../../domain/runtime-id.ts';
import type { SandboxRecord } from '../../domain/types.ts';
import type { Runtime, RuntimeCapabilities } from '../ports.ts';

/** The parts of the Runtime port that say which runtimes there are. */
export type RuntimeChoice = Pick<Runtime, 'name' | 'capabilities' | 'runtimes' | 'runtimeOf'>;

export function isRuntimeName(v: unknown): v is RuntimeName {
  return (RUNTIME_NAMES as readonly unknown[]).includes(v);
}

/** The runtimes a create may name: the keys of `runtime.runtimes`, else the runtime's own name. */
export function offeredRuntimes(runtime: RuntimeChoice): RuntimeName[] {
  const offered = runtime.runtimes;
  return RUNTIME_NAMES.filter((n) => (offered ? offered[n] !== undefined : n === runtime.name));
}

/**
 * The runtime of a create that names none: the daemon's own name when it is a runtime's (a router names
 * its default), else the first it offers (`native` for a runtime named otherwise, as the test double).
 */
export function defaultRuntime(runtime: RuntimeChoice): RuntimeName {
  if (isRuntimeName(runtime.name)) return runtime.name;
  return offeredRuntimes(runtime)[0] ?? 'native';
}

/** What the runtime `name` can do (a daemon with one runtime: its capabilities). */
export function capabilitiesOf(runtime: RuntimeChoice, name: RuntimeName): RuntimeCapabilities {
  return runtime.runtimes?.[name] ?? runtime.capabilities;
}

/** The runtime that made a sandbox (a runtime that cannot say: its own name, else the record's kind). */
export function runtimeOfSandbox(runtime: RuntimeChoice, rec: SandboxRecord): RuntimeName {
  return runtime.runtimeOf?.(rec) ?? (isRuntimeName(runtime.name) ? runtime.name : runtimeKind(rec));
}
