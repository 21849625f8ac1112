/**
 * The audit log: one JSON line per request on the TCP listener, appended to <stateDir>/audit.log.
 *
 * Lines are built from an allow-list of fields, never by copying a request: tokens, headers, bodies,
 * file contents, commands and environment values must not reach the log (it outlives them and is read
 * by more people). Free-text fields are length-bounded and sandbox ids are checked against a pattern, so
 * a client cannot smuggle data (or fake lines) into the log through an id.
 */
import { createWriteStream, type WriteStream } from 'node:fs';

export interface AuditEntry {
  tenant: string;
  /** `METHOD /route/pattern` for REST; `/mcp` for MCP. */
  route: string;
  /** MCP: the tool called (tools/call) or the JSON-RPC method. */
  tool?: string | undefined;
  sandbox?: string | undefined;
  /** `ok`, or the error code (catalog code, or `http_<status>`). */
  outcome: string;
  status: number;
  durationMs: number;
}

export interface AuditLine {
  time: string;
  tenant: string;
  route: string;
  tool?: string;
  sandbox?: string;
  outcome: string;
  status: number;
  duration_ms: number;
}

const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const SAFE_NAME = /^[A-Za-z0-9_./ :{}-]{1,200}$/;

/** The line written for `e`: only allow-listed fields, each bounded (see the module comment). */
export function auditLine(e: AuditEntry, now = new Date()): AuditLine {
  const line: AuditLine = {
    time: now.toISOString(),
    tenant: SAFE_ID.test(e.tenant) ? e.tenant : '?',
    route: SAFE_NAME.test(e.route) ? e.route : '?',
    outcome: /^[a-z0-9_]{1,40}$/.test(e.outcome) ? e.outcome : 'unknown',
    status: Math.trunc(e.status),
    duration_ms: Math.max(0, Math.round(e.durationMs)),
  };
  if (e.tool !== undefined) line.tool = SAFE_NAME.test(e.tool) ? e.tool : '?';
  if (e.sandbox !== undefined) line.sandbox = SAFE_ID.test(e.sandbox) ? e.sandbox : '?';
  return line;
}

export interface AuditLog {
  write(e: AuditEntry): void;
  close(): Promise<void>;
}

/** Append to `path` (created 0600: it names tenants and sandboxes). Write errors go to `onError`. */
export function createAuditLog(path: string, onError?: (e: Error) => void): AuditLog {
  const out: WriteStream = createWriteStream(path, { flags: 'a', mode: 0o600 });
  out.on('error', (e) => onError?.(e));
  return {
    write(e) {
      out.write(`${JSON.stringify(auditLine(e))}\n`);
    },
    close: () => new Promise<void>((resolve) => out.end(resolve)),
  };
}

/** An audit log kept in memory (tests, and listeners started without a state dir). */
export function memoryAuditLog(): AuditLog & { lines: AuditLine[] } {
  const lines: AuditLine[] = [];
  return {
    lines,
    write: (e) => {
      lines.push(auditLine(e));
    },
    close: async () => undefined,
  };
}
