/**
 * The audit trail: one JSON line per call through any door of the daemon — the local Unix socket (the
 * CLI, and `forkbox mcp`, which is a client of it) and the TCP listener (REST and MCP). Every door
 * writes through one AuditLog (the file writer is transports/audit-file.ts).
 *
 * Lines are built from an allow-list of fields, never by copying a request: tokens, headers, bodies,
 * file contents, commands (argv may hold secrets) and environment values must not reach the log (it
 * outlives them and is read by more people). Free-text fields are length-bounded and ids are checked
 * against a pattern, so a client cannot smuggle data (or fake lines) into the log through an id.
 *
 * Who called: `tenant` (the token's tenant on HTTP; `default` on the socket), and on the socket the
 * peer's `uid`/`pid` from SO_PEERCRED — verified by the kernel. `client` is what the caller says it is
 * (`cli`, `mcp-stdio`, from a request header): a claim, recorded as such, never used for a decision.
 */
import { toForkboxError } from '../domain/errors.ts';
import { SIZES } from '../domain/limits.ts';
import type { ForkboxApi } from '../service/api.ts';

/**
 * `egress`: a connection through a sandbox's egress proxy (network/egress-proxy.ts), accepted or refused.
 * `port`: a connection to a sandbox's published port (network/published-ports.ts; route `tcp` or `http`).
 */
export type AuditDoor = 'socket' | 'http' | 'egress' | 'port';

export interface AuditEntry {
  door: AuditDoor;
  tenant: string;
  /** The namespaces the caller's token is limited to (absent: every namespace of its tenant). */
  namespaces?: readonly string[] | undefined;
  /** The client's own name for itself (a claim, not verified). */
  client?: string | undefined;
  /** Socket door: the peer's uid and pid (SO_PEERCRED, verified). */
  uid?: number | undefined;
  pid?: number | undefined;
  /** `METHOD /route/pattern` for REST; `/mcp` for MCP. */
  route: string;
  /** MCP: the tool called (tools/call) or the JSON-RPC method. */
  tool?: string | undefined;
  sandbox?: string | undefined;
  /** Egress: the host (name or address) and port the sandbox asked for; port: the sandbox's port. */
  host?: string | undefined;
  port?: number | undefined;
  /** `ok`, or the error code (catalog code, or `http_<status>`). */
  outcome: string;
  status: number;
  durationMs: number;
}

export interface AuditLine {
  time: string;
  door: AuditDoor;
  tenant: string;
  /** The caller's namespace limit, when its token has one. */
  namespaces?: string[];
  client?: string;
  uid?: number;
  pid?: number;
  route: string;
  tool?: string;
  sandbox?: string;
  host?: string;
  port?: number;
  outcome: string;
  status: number;
  duration_ms: number;
}

const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const SAFE_NAME = /^[A-Za-z0-9_./ :{}-]{1,200}$/;
const SAFE_HOST = /^[A-Za-z0-9_.:*[\]-]{1,253}$/;
const SAFE_CLIENT = /^[a-z0-9][a-z0-9_.-]{0,39}$/;
const id32 = (n: number | undefined): number | undefined =>
  n !== undefined && Number.isInteger(n) && n >= 0 && n <= 0xffffffff ? n : undefined;

/** The line written for `e`: only allow-listed fields, each bounded (see the module comment). */
export function auditLine(e: AuditEntry, now = new Date()): AuditLine {
  const line: AuditLine = {
    time: now.toISOString(),
    door: e.door === 'socket' || e.door === 'egress' || e.door === 'port' ? e.door : 'http',
    tenant: SAFE_ID.test(e.tenant) ? e.tenant : '?',
    route: SAFE_NAME.test(e.route) ? e.route : '?',
    outcome: /^[a-z0-9_]{1,40}$/.test(e.outcome) ? e.outcome : 'unknown',
    status: Math.trunc(e.status),
    duration_ms: Math.max(0, Math.round(e.durationMs)),
  };
  if (e.namespaces !== undefined)
    line.namespaces = e.namespaces.slice(0, SIZES.tokenNamespaces).map((n) => (SAFE_ID.test(n) ? n : '?'));
  if (e.client !== undefined) line.client = SAFE_CLIENT.test(e.client) ? e.client : '?';
  const uid = id32(e.uid);
  const pid = id32(e.pid);
  if (uid !== undefined) line.uid = uid;
  if (pid !== undefined) line.pid = pid;
  if (e.tool !== undefined) line.tool = SAFE_NAME.test(e.tool) ? e.tool : '?';
  if (e.sandbox !== undefined) line.sandbox = SAFE_ID.test(e.sandbox) ? e.sandbox : '?';
  if (e.host !== undefined) line.host = SAFE_HOST.test(e.host) ? e.host : '?';
  if (e.port !== undefined && Number.isInteger(e.port) && e.port >= 0 && e.port <= 65535) line.port = e.port;
  return line;
}

/** Which recent lines to read back: one tenant's, optionally of one sandbox, door or outcome. */
export interface AuditQuery {
  tenant: string;
  /**
   * A reader limited to these namespaces sees only the lines of callers limited to some of them (a line
   * of an unlimited caller may name any namespace's sandbox, so it is not shown).
   */
  namespaces?: readonly string[] | undefined;
  sandbox?: string | undefined;
  door?: AuditDoor | undefined;
  /** `ok`, or `error` for every other outcome. */
  outcome?: 'ok' | 'error' | undefined;
  /** At most this many, newest first. */
  limit: number;
}

export interface AuditLog {
  write(e: AuditEntry): void;
  /** The newest lines matching `q` among the recent ones the log still holds (newest first). */
  recent(q: AuditQuery): AuditLine[];
  close(): Promise<void>;
}

const withinNamespaces = (l: AuditLine, readable: readonly string[]) =>
  l.namespaces?.every((n) => readable.includes(n)) === true;

/** The lines of `lines` (oldest first) that match `q`, newest first. */
export function matchAudit(lines: readonly AuditLine[], q: AuditQuery): AuditLine[] {
  const out: AuditLine[] = [];
  for (let i = lines.length - 1; i >= 0 && out.length < q.limit; i--) {
    const l = lines[i] as AuditLine;
    if (l.tenant !== q.tenant) continue;
    if (q.namespaces !== undefined && !withinNamespaces(l, q.namespaces)) continue;
    if (q.sandbox !== undefined && l.sandbox !== q.sandbox) continue;
    if (q.door !== undefined && l.door !== q.door) continue;
    if (q.outcome !== undefined && (l.outcome === 'ok') !== (q.outcome === 'ok')) continue;
    out.push(l);
  }
  return out;
}

/** An audit log kept in memory (tests, and listeners started without a state dir). */
export function memoryAuditLog(): AuditLog & { lines: AuditLine[] } {
  const lines: AuditLine[] = [];
  return {
    lines,
    write: (e) => {
      lines.push(auditLine(e));
    },
    recent: (q) => matchAudit(lines, q),
    close: async () => undefined,
  };
}

/** The outcome of a finished request: the error code noted during it, else by its HTTP status. */
export function outcomeOf(errorCode: string | undefined, status: number): string {
  return errorCode ?? (status < 400 ? 'ok' : `http_${status}`);
}

/**
 * `api` with every method's failure reported to `onError` (its catalog code) before it is rethrown:
 * the audit outcome of calls whose errors end up inside a streamed body rather than in the status.
 */
export function reportErrors(api: ForkboxApi, onError: (code: string, e: unknown) => void): ForkboxApi {
  const failed = (e: unknown): never => {
    onError(toForkboxError(e).code, e);
    throw e;
  };
  const out = {} as Record<string, unknown>;
  for (const [name, fn] of Object.entries(api)) {
    out[name] =
      typeof fn === 'function'
        ? (...args: unknown[]) => {
            try {
              const r = (fn as (...a: unknown[]) => unknown).apply(api, args);
              return r instanceof Promise ? r.catch(failed) : r;
            } catch (e) {
              return failed(e);
            }
          }
        : fn;
  }
  return out as unknown as ForkboxApi;
}

const SANDBOX_IN_PATH = /^\/v1\/sandboxes\/([^/]+)/;

/** The sandbox id a REST path names (`/v1/sandboxes/<id>/…`), if any. */
export function sandboxInPath(path: string): string | undefined {
  const raw = SANDBOX_IN_PATH.exec(path)?.[1];
  if (raw === undefined) return undefined;
  try {
    return decodeURIComponent(raw);
  } catch {
    return '?';
  }
}
