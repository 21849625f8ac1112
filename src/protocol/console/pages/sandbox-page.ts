/**
 * A sandbox's page: its details, children, exec history, the REPL, a link to its files, and the fork /
 * snapshot / TTL / kill actions.
 */

import type { ExecRecord } from '../../../domain/types.ts';
import type { SandboxInfo } from '../../../service/api.ts';
import { TEMPLATE_LABEL } from '../../../service/sandboxes/template-configs.ts';
import { bytes, cpuSeconds, duration, ttlLeft } from '../format.ts';
import { type Html, h, sandboxLink } from '../markup.ts';
import { filesHref } from './files-page.ts';
import { type ReplShown, replPanel } from './repl-panel.ts';

/** Exec records shown, newest first. */
export const EXECS_SHOWN = 50;

function details(s: SandboxInfo, now: number): Html {
  const u = s.usage;
  const parent = s.parentId ? sandboxLink(s.parentId) : h`<span class="muted">none</span>`;
  const rows: [string, unknown][] = [
    ['id', s.id],
    ['name', s.name],
    ['namespace', s.namespace],
    ['state', s.state],
    ['image', s.image],
    ['runtime', s.runtime],
    ['template', s.labels[TEMPLATE_LABEL] ?? ''],
    ['parent', parent],
    ['age', duration(now - Date.parse(s.createdAt))],
    ['TTL', ttlLeft(s.expiresAt, now)],
    ['CPU', u ? cpuSeconds(u.cpuUsageNs) : ''],
    ['memory', u ? bytes(u.memoryBytes) : ''],
    ['limits', `${bytes(s.limits.memoryBytes)}, ${s.limits.cpus} CPU, ${s.limits.pids} pids`],
  ];
  return h`<table class="details">${rows.map(([k, v]) => h`<tr><th>${k}</th><td>${v}</td></tr>`)}</table>`;
}

function execRow(e: ExecRecord): Html {
  const took = e.endedAt === null ? 'running' : duration(e.endedAt - e.startedAt);
  const exit = e.exitCode ?? (e.signal === null ? '' : `signal ${e.signal}`);
  const href = `/console/sandboxes/${encodeURIComponent(e.sandboxId)}/execs/${encodeURIComponent(e.id)}`;
  return h`<tr><td><a href="${href}">${e.id}</a></td><td><code>${e.command.join(' ')}</code></td><td>${e.state}</td>
<td>${exit}</td><td>${new Date(e.startedAt).toISOString()}</td><td>${took}</td></tr>`;
}

function actions(s: SandboxInfo): Html {
  const base = `/console/sandboxes/${encodeURIComponent(s.id)}`;
  return h`<section><h3>Actions</h3>
<form class="inline" method="post" action="${base}/fork"><label>Fork into
<input type="number" name="n" min="1" max="8" value="1"> children</label> <button type="submit">Fork</button></form>
<form class="inline" method="post" action="${base}/snapshot"><label>Snapshot name
<input type="text" name="name" maxlength="63"></label> <button type="submit">Snapshot</button></form>
<form class="inline" method="post" action="${base}/ttl"><label>End in
<input type="number" name="minutes" min="1" max="${MAX_TTL_MINUTES}" value="60"> minutes</label> <button type="submit">Set TTL</button></form>
<form class="inline" method="post" action="${base}/kill"><button type="submit">Kill</button></form>
<form class="inline" method="get" action="${base}/diff"><label>Diff against
<input type="text" name="against" maxlength="200" placeholder="${s.parentId ?? 'sandbox id'}"></label>
<button type="submit">Diff</button></form></section>`;
}

/** The longest TTL the page's form offers (the API enforces its own bound). */
export const MAX_TTL_MINUTES = 7 * 24 * 60;

export function sandboxBody(
  s: SandboxInfo,
  execs: ExecRecord[],
  now: number,
  extra: { notice?: string | undefined; repl?: ReplShown } = {},
): Html {
  const { notice } = extra;
  const live = s.state === 'running';
  const shown = [...execs].sort((a, b) => b.startedAt - a.startedAt).slice(0, EXECS_SHOWN);
  const kids = s.children.length
    ? h`<ul>${s.children.map((id) => h`<li>${sandboxLink(id)}</li>`)}</ul>`
    : h`<p class="muted">No children.</p>`;
  const diffLink = s.parentId
    ? h`<p><a id="diff-parent" href="/console/sandboxes/${encodeURIComponent(s.id)}/diff">Diff against its parent</a></p>`
    : '';
  const execTable = shown.length
    ? h`<table><thead><tr><th>exec</th><th>command</th><th>state</th><th>exit</th><th>started</th><th>took</th></tr></thead>
<tbody>${shown.map(execRow)}</tbody></table>`
    : h`<p class="muted">No execs yet.</p>`;
  return h`<h2>Sandbox ${s.name}</h2>${notice ? h`<p class="notice">${notice}</p>` : ''}
${details(s, now)}${diffLink}${live ? h`<p><a id="files-link" href="${filesHref(s.id, '/')}">Files</a> · <a id="terminal-link" href="/console/sandboxes/${encodeURIComponent(s.id)}/terminal">Terminal</a></p>` : ''}
${live ? actions(s) : ''}${live ? replPanel(s.id, extra.repl) : ''}
<section><h3>Children</h3>${kids}</section><section><h3>Exec history</h3>${execTable}</section>`;
}
