/**
 * The one place rows map to records and back. Reading is defensive: a JSON column that is corrupt or of
 * the wrong shape degrades to a safe default instead of crashing the daemon at start-up (the record is
 * still listed, so the user can kill or delete it).
 */

import { formatNetwork, NETWORK_NONE, type NetworkPolicy, parseNetwork } from '../../domain/network.ts';
import type {
  ExecRecord,
  ExecState,
  Limits,
  PublishedPort,
  SandboxRecord,
  SandboxState,
  TemplateRecord,
  TemplateState,
} from '../../domain/types.ts';
import { DEFAULT_LIMITS } from '../../domain/types.ts';
import type { LayerKind, LayerRecord } from './types.ts';

export interface SandboxRow {
  id: string;
  name: string;
  state: string;
  image: string;
  template_id: string;
  parent_id: string | null;
  depth: number;
  limits: string;
  env: string;
  labels: string;
  /** Its network policy's wire form (domain/network.ts). */
  network: string;
  /** Its published ports, JSON [{port, hostPort}]. */
  ports: string;
  expires_at: number | null;
  created_at: number;
  updated_at: number;
  host_pid: number | null;
  runtime: string;
  end_reason: string | null;
  tenant: string;
  namespace: string;
  session: string | null;
}

export interface TemplateRow {
  id: string;
  image: string;
  config_key: string;
  state: string;
  host_pid: number | null;
  created_at: number;
  runtime: string;
}

export interface ExecRow {
  id: string;
  sandbox_id: string;
  idempotency_key: string | null;
  command: string;
  state: string;
  exit_code: number | null;
  signal: number | null;
  timed_out: number;
  truncated: number;
  oom_killed: number;
  started_at: number;
  ended_at: number | null;
  leftovers: number;
  tree: string | null;
  streams: string | null;
}

export interface LayerRow {
  id: string;
  path: string;
  kind: string;
  parent_id: string | null;
  refcount: number;
  created_at: number;
}

// ───────────────────────────── JSON helpers ─────────────────────────────

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function parseObject(text: string): Record<string, unknown> {
  const v = parseJson(text);
  return isPlainObject(v) ? v : {};
}

export function parseStringMap(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parseObject(text))) if (typeof v === 'string') out[k] = v;
  return out;
}

/** A JSON array column's elements that pass `keep`; [] when the column holds no array. */
export function parseArray<T>(text: string, keep: (x: unknown) => x is T): T[] {
  const v = parseJson(text);
  return Array.isArray(v) ? v.filter(keep) : [];
}

export function parseStringArray(text: string): string[] {
  return parseArray(text, (x): x is string => typeof x === 'string');
}

export function parseLimits(text: string): Limits {
  const o = parseObject(text);
  const num = (k: 'memoryBytes' | 'pids' | 'cpus'): number => {
    const v = o[k];
    return typeof v === 'number' && Number.isFinite(v) ? v : DEFAULT_LIMITS[k];
  };
  // Disk limits came later: a record without them has none (its storage was made without a quota).
  const disk = (k: 'diskBytes' | 'diskInodes'): number => {
    const v = o[k];
    return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0;
  };
  return {
    memoryBytes: num('memoryBytes'),
    pids: num('pids'),
    cpus: num('cpus'),
    diskBytes: disk('diskBytes'),
    diskInodes: disk('diskInodes'),
  };
}

/** STRICT INTEGER columns reject REAL values; stamps computed with fractions (ttl 0.5 s) are rounded. */
function int(v: number): number {
  return Math.round(v);
}
function intOrNull(v: number | null): number | null {
  return v === null ? null : Math.round(v);
}

// ───────────────────────────── sandboxes ─────────────────────────────

export function sandboxToRow(r: SandboxRecord): SandboxRow {
  return {
    id: r.id,
    name: r.name,
    state: r.state,
    image: r.image,
    template_id: r.templateId,
    parent_id: r.parentId,
    depth: int(r.depth),
    limits: JSON.stringify(r.limits),
    env: JSON.stringify(r.env),
    labels: JSON.stringify(r.labels),
    expires_at: intOrNull(r.expiresAt),
    created_at: int(r.createdAt),
    updated_at: int(r.updatedAt),
    host_pid: intOrNull(r.hostPid),
    runtime: JSON.stringify(r.runtime),
    end_reason: r.endReason,
    tenant: r.tenant,
    namespace: r.namespace,
    session: r.session,
    network: formatNetwork(r.network),
    ports: JSON.stringify(r.ports ?? []),
  };
}

/** A stored policy that does not parse any more reads as 'none': no egress rather than a crash. */
function parseStoredNetwork(s: string): NetworkPolicy {
  try {
    return parseNetwork(s);
  } catch {
    return NETWORK_NONE;
  }
}

/** Published ports as stored; anything malformed is dropped (no port rather than a crash). */
function parseStoredPorts(s: string | undefined): PublishedPort[] {
  let v: unknown;
  try {
    v = JSON.parse(s ?? '[]');
  } catch {
    return [];
  }
  if (!Array.isArray(v)) return [];
  const ok = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 65535;
  return v.flatMap((p: { port?: unknown; hostPort?: unknown }) =>
    p && ok(p.port) && ok(p.hostPort) ? [{ port: p.port, hostPort: p.hostPort }] : [],
  );
}

export function rowToSandbox(row: SandboxRow): SandboxRecord {
  return {
    id: row.id,
    name: row.name,
    state: row.state as SandboxState,
    image: row.image,
    templateId: row.template_id,
    parentId: row.parent_id,
    depth: row.depth,
    limits: parseLimits(row.limits),
    env: parseStringMap(row.env),
    labels: parseStringMap(row.labels),
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    hostPid: row.host_pid,
    runtime: parseObject(row.runtime),
    endReason: row.end_reason,
    tenant: row.tenant,
    namespace: row.namespace,
    session: row.session,
    network: parseStoredNetwork(row.network),
    ports: parseStoredPorts(row.ports),
  };
}

// ───────────────────────────── templates ─────────────────────────────

export function templateToRow(r: TemplateRecord): TemplateRow {
  return {
    id: r.id,
    image: r.image,
    config_key: r.configKey,
    state: r.state,
    host_pid: intOrNull(r.hostPid),
    created_at: int(r.createdAt),
    runtime: JSON.stringify(r.runtime),
  };
}

export function rowToTemplate(row: TemplateRow): TemplateRecord {
  return {
    id: row.id,
    image: row.image,
    configKey: row.config_key,
    state: row.state as TemplateState,
    hostPid: row.host_pid,
    createdAt: row.created_at,
    runtime: parseObject(row.runtime),
  };
}

// ───────────────────────────── execs ─────────────────────────────

export function execToRow(r: ExecRecord): ExecRow {
  return {
    id: r.id,
    sandbox_id: r.sandboxId,
    idempotency_key: r.idempotencyKey,
    command: JSON.stringify(r.command),
    state: r.state,
    exit_code: intOrNull(r.exitCode),
    signal: intOrNull(r.signal),
    timed_out: r.timedOut ? 1 : 0,
    truncated: r.truncated ? 1 : 0,
    oom_killed: r.oomKilled ? 1 : 0,
    started_at: int(r.startedAt),
    ended_at: intOrNull(r.endedAt),
    leftovers: int(r.leftovers),
    tree: r.tree,
    streams: r.streams === null ? null : JSON.stringify(r.streams),
  };
}

function parseStreams(text: string | null): ExecRecord['streams'] {
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as ExecRecord['streams'];
    return v !== null && typeof v === 'object' && 'stdout' in v && 'stderr' in v ? v : null;
  } catch {
    return null;
  }
}

export function rowToExec(row: ExecRow): ExecRecord {
  return {
    id: row.id,
    sandboxId: row.sandbox_id,
    idempotencyKey: row.idempotency_key,
    command: parseStringArray(row.command),
    state: row.state as ExecState,
    exitCode: row.exit_code,
    signal: row.signal,
    timedOut: row.timed_out !== 0,
    truncated: row.truncated !== 0,
    oomKilled: row.oom_killed !== 0,
    startedAt: row.started_at,
    endedAt: row.ended_at,
    leftovers: row.leftovers ?? 0,
    tree: row.tree ?? null,
    streams: parseStreams(row.streams ?? null),
  };
}

// ───────────────────────────── layers ─────────────────────────────

export function layerToRow(r: LayerRecord): LayerRow {
  return {
    id: r.id,
    path: r.path,
    kind: r.kind,
    parent_id: r.parentId,
    refcount: int(r.refcount),
    created_at: int(r.createdAt),
  };
}

export function rowToLayer(row: LayerRow): LayerRecord {
  return {
    id: row.id,
    path: row.path,
    kind: row.kind as LayerKind,
    parentId: row.parent_id,
    refcount: row.refcount,
    createdAt: row.created_at,
  };
}

/** Apply a partial patch, skipping keys whose value is undefined and keys the caller may not change. */
export function applyPatch<T extends object>(base: T, patch: object, frozen: readonly string[]): T {
  const out = { ...base } as Record<string, unknown>;
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined || frozen.includes(k)) continue;
    out[k] = v;
  }
  return out as T;
}
