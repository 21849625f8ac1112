/**
 * DevBench's audit events. DevBench had no tool or resource to read its audit trail: each event was one
 * structured JSON log line (`audit_event`: timestamp, event_type, container_id, client_name, session_id,
 * details). The devbench toolset writes the same events to the MCP server's log (stderr for stdio,
 * shown at FORKBOX_LOG_LEVEL=info, DevBench's default level), while the daemon's audit log (protocol/
 * audit.ts) records every underlying call as it does for any client (door, route, sandbox, outcome).
 *
 * Details are an allow-list per event, as forkbox's own audit (never file contents, commands or
 * environment values: argv may hold secrets — DevBench logged `cmd`, forkbox logs its length). Strings
 * are bounded, so a caller cannot flood the log through an alias or a path.
 */
import type { ToolLog } from '../../kit/tool-kit.ts';

export type AuditEventType =
  | 'container_spawn'
  | 'container_attach'
  | 'container_kill'
  | 'exec_start'
  | 'exec_cancel'
  | 'fs_read'
  | 'fs_write'
  | 'fs_delete'
  | 'security_as_root'
  | 'system_reconcile'
  | 'system_gc';

type Detail = string | number | boolean | null;

export interface AuditFields {
  container_id?: string;
  client_name?: string;
  session_id?: string;
  details?: Record<string, Detail>;
}

const bound = (v: Detail): Detail => (typeof v === 'string' ? v.slice(0, 256) : v);

/** One DevBench audit event, as DevBench wrote it: `{timestamp, event_type, …}` under `audit_event`. */
export function auditEvent(log: ToolLog, type: AuditEventType, f: AuditFields = {}): void {
  const event: Record<string, unknown> = { timestamp: new Date().toISOString(), event_type: type };
  if (f.container_id) event.container_id = bound(f.container_id);
  if (f.client_name) event.client_name = bound(f.client_name);
  if (f.session_id) event.session_id = bound(f.session_id);
  if (f.details && Object.keys(f.details).length > 0) {
    event.details = Object.fromEntries(Object.entries(f.details).map(([k, v]) => [k, bound(v)]));
  }
  log.info({ audit: event }, 'audit_event');
}
