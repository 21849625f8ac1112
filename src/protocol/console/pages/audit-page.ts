/**
 * The audit log for people: the caller's tenant's newest audit lines (protocol/audit.ts: allow-listed
 * fields only), filterable by sandbox, door and outcome. Read from the tail of the log the daemon holds
 * (its last MiB on disk), newest first, at most AUDIT_SHOWN.
 */
import type { Hono } from 'hono';
import { ForkboxError } from '../../../domain/errors.ts';
import type { AuditDoor, AuditLine, AuditLog, AuditQuery } from '../../audit.ts';
import { type Html, h, page, sandboxLink } from '../markup.ts';

export const AUDIT_SHOWN = 200;
const DOORS: readonly AuditDoor[] = ['socket', 'http', 'egress', 'port'];
const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** The query's filters, checked (a value outside its set is refused, not ignored). */
export function auditFilters(q: (k: string) => string | undefined): Omit<AuditQuery, 'tenant' | 'limit'> {
  const sandbox = q('sandbox') || undefined;
  const door = q('door') || undefined;
  const outcome = q('outcome') || undefined;
  if (sandbox !== undefined && !ID.test(sandbox))
    throw new ForkboxError('invalid_argument', 'sandbox must be a sandbox id.');
  if (door !== undefined && !DOORS.includes(door as AuditDoor))
    throw new ForkboxError('invalid_argument', `door is one of ${DOORS.join(', ')}.`);
  if (outcome !== undefined && outcome !== 'ok' && outcome !== 'error')
    throw new ForkboxError('invalid_argument', 'outcome is ok or error.');
  return { sandbox, door: door as AuditDoor | undefined, outcome: outcome as 'ok' | 'error' | undefined };
}

function row(l: AuditLine): Html {
  const who = [l.client, l.uid === undefined ? undefined : `uid ${l.uid}`].filter(Boolean).join(', ');
  const what = [l.tool, l.host === undefined ? undefined : `${l.host}:${l.port ?? ''}`]
    .filter(Boolean)
    .join(' ');
  return h`<tr><td>${l.time}</td><td>${l.door}</td><td>${who}</td><td><code>${l.route}</code> ${what}</td>
<td>${l.sandbox ? sandboxLink(l.sandbox) : ''}</td><td class="${l.outcome === 'ok' ? '' : 'error'}">${l.outcome}</td>
<td>${l.status}</td><td>${l.duration_ms} ms</td></tr>`;
}

function form(f: Omit<AuditQuery, 'tenant' | 'limit'>): Html {
  const opt = (v: string, cur: string | undefined) =>
    h`<option value="${v}"${cur === v ? h` selected` : ''}>${v || 'any'}</option>`;
  return h`<form method="get" action="/console/audit" class="inline">
<label>sandbox <input type="text" name="sandbox" maxlength="128" value="${f.sandbox ?? ''}"></label>
<label>door <select name="door">${['', ...DOORS].map((d) => opt(d, f.door ?? ''))}</select></label>
<label>outcome <select name="outcome">${['', 'ok', 'error'].map((o) => opt(o, f.outcome ?? ''))}</select></label>
<button type="submit">Filter</button></form>`;
}

export function auditBody(lines: readonly AuditLine[], f: Omit<AuditQuery, 'tenant' | 'limit'>): Html {
  const table = lines.length
    ? h`<table id="audit"><thead><tr><th>time</th><th>door</th><th>client</th><th>call</th><th>sandbox</th>
<th>outcome</th><th>status</th><th>took</th></tr></thead><tbody>${lines.map(row)}</tbody></table>`
    : h`<p class="muted">No audit lines match.</p>`;
  return h`<h2>Audit log</h2>${form(f)}
<p class="muted">Your tenant's newest ${AUDIT_SHOWN} calls at most, newest first (a token limited to namespaces sees the calls of tokens limited to some of them). Counters for monitoring:
<code>/metrics</code> (Prometheus text, with a bearer token).</p>${table}`;
}

export function mountAuditRoute(
  app: Hono,
  deps: {
    audit: AuditLog | undefined;
    caller(): { tenant: string; namespaces?: readonly string[] | undefined };
    loggedIn: boolean;
  },
): void {
  app.get('/audit', (c) => {
    const f = auditFilters((k) => c.req.query(k));
    const { tenant, namespaces } = deps.caller();
    const lines = deps.audit?.recent({ ...f, tenant, namespaces, limit: AUDIT_SHOWN }) ?? [];
    return c.html(page('Audit log', auditBody(lines, f), { loggedIn: deps.loggedIn }));
  });
}
