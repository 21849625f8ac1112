/**
 * The dashboard: the tenant's live sandboxes as a table and as a fork tree (both replaced live); each
 * sandbox's snapshots and the children merged back into it in the tree under it (snapshots with the
 * sandboxes restored from them and a restore button),
 * and the snapshots of sandboxes no longer shown in a list of their own.
 */
import type { SandboxInfo, SnapshotInfo } from '../../../service/api.ts';
import { TEMPLATE_LABEL } from '../../../service/sandboxes/template-configs.ts';
import { bytes, cpuSeconds, duration, ttlLeft } from '../format.ts';
import { type Html, h, sandboxLink } from '../markup.ts';
import { buildForest, type TreeNode } from './tree.ts';

export interface DashboardData {
  sandboxes: SandboxInfo[];
  /** More sandboxes than shown (the list is bounded). */
  more: number;
  snapshots: SnapshotInfo[];
  /** Children merged back into a shown sandbox: the winner's old id, and the sandbox it went into. */
  merges: { winner: string; into: string }[];
}

function mergeNode(winner: string): Html {
  return h`<li class="merge" data-merged="${winner}"><span class="state merge">merged</span> ${winner} <span class="muted">(its files and state are this sandbox's now)</span></li>`;
}

function snapshotNode(snap: SnapshotInfo): Html {
  const restored = snap.dependents.length
    ? h` <span class="muted">restored as</span> ${snap.dependents.map((id) => h`${sandboxLink(id)} `)}`
    : '';
  return h`<li class="snap" data-snapshot="${snap.id}"><span class="state snapshot">snapshot</span> ${snap.name}
<form class="inline" method="post" action="/console/snapshots/${encodeURIComponent(snap.id)}/restore"><button type="submit">Restore</button></form>${restored}</li>`;
}

function row(s: SandboxInfo, now: number): Html {
  const u = s.usage;
  return h`<tr data-id="${s.id}"><td>${sandboxLink(s.id)}</td><td>${s.name}</td>
<td><span class="state ${s.state}">${s.state}</span></td><td>${s.image}</td>
<td>${s.labels[TEMPLATE_LABEL] ?? ''}</td><td>${duration(now - Date.parse(s.createdAt))}</td>
<td>${ttlLeft(s.expiresAt, now)}</td><td>${u ? cpuSeconds(u.cpuUsageNs) : ''}</td>
<td>${u ? bytes(u.memoryBytes) : ''}</td></tr>`;
}

/** The table's rows (the live fragment). */
export function sandboxRows(data: DashboardData, now: number): Html {
  if (data.sandboxes.length === 0) return h`<tr><td colspan="9" class="muted">No sandboxes.</td></tr>`;
  const more = data.more > 0 ? h`<tr><td colspan="9" class="muted">and ${data.more} more</td></tr>` : '';
  return h`${data.sandboxes.map((s) => row(s, now))}${more}`;
}

interface Extras {
  snapsOf: Map<string, SnapshotInfo[]>;
  mergesOf: Map<string, string[]>;
}

function treeNode(n: TreeNode<SandboxInfo>, x: Extras): Html {
  const s = n.sandbox;
  const orphan = n.missingParent ? h` <span class="muted">(parent ${n.missingParent})</span>` : '';
  const snaps = x.snapsOf.get(s.id) ?? [];
  const merged = x.mergesOf.get(s.id) ?? [];
  const kids =
    n.children.length + snaps.length + merged.length > 0
      ? h`<ul>${n.children.map((k) => treeNode(k, x))}${merged.map(mergeNode)}${snaps.map(snapshotNode)}</ul>`
      : '';
  return h`<li data-id="${s.id}">${sandboxLink(s.id, `${s.name} (${s.id})`)} <span class="state ${s.state}">${s.state}</span>${orphan}${kids}</li>`;
}

/** The fork tree (the live fragment). */
export function forkTree(data: DashboardData): Html {
  const roots = buildForest(data.sandboxes);
  const shown = new Set(data.sandboxes.map((s) => s.id));
  const snapsOf = new Map<string, SnapshotInfo[]>();
  for (const snap of [...data.snapshots].reverse())
    if (shown.has(snap.source)) snapsOf.set(snap.source, [...(snapsOf.get(snap.source) ?? []), snap]);
  const mergesOf = new Map<string, string[]>();
  for (const m of data.merges) mergesOf.set(m.into, [...(mergesOf.get(m.into) ?? []), m.winner]);
  const others = data.snapshots.filter((snap) => !shown.has(snap.source));
  const rest = others.length
    ? h`<h3>Snapshots of ended sandboxes</h3><ul class="tree">${others.map(snapshotNode)}</ul>`
    : '';
  if (roots.length === 0) return h`<p class="muted">No sandboxes.</p>${rest}`;
  return h`<ul class="tree">${roots.map((r) => treeNode(r, { snapsOf, mergesOf }))}</ul>${rest}`;
}

export function dashboardBody(data: DashboardData, now: number): Html {
  return h`<section><h2>Sandboxes</h2><table><thead><tr><th>id</th><th>name</th><th>state</th>
<th>image</th><th>template</th><th>age</th><th>TTL</th><th>CPU</th><th>memory</th></tr></thead>
<tbody id="sandboxes">${sandboxRows(data, now)}</tbody></table></section>
<section><h2>Fork tree</h2><div id="tree">${forkTree(data)}</div></section>`;
}
