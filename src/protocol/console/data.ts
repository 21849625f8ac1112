/**
 * What the dashboard reads: the tenant's live sandboxes (bounded), with cgroup usage for running ones,
 * its snapshots (bounded, newest), and the merges into shown sandboxes (bounded).
 */
import type { ForkboxApi, SandboxInfo } from '../../service/api.ts';
import type { DashboardData } from './pages/dashboard.ts';

/** Sandboxes shown on the dashboard (newest first past the bound); snapshots and merges likewise. */
export const MAX_SHOWN = 100;
const MERGED_INTO = /^merged into (\S+)$/;

export async function loadDashboard(api: ForkboxApi): Promise<DashboardData> {
  const all = await api.listSandboxes({ namespace: '*' });
  const newest = [...all].sort((a, b) => b.createdAt.localeCompare(a.createdAt)).slice(0, MAX_SHOWN);
  const sandboxes: SandboxInfo[] = [];
  for (const s of newest) {
    if (s.state !== 'running') {
      sandboxes.push(s);
      continue;
    }
    // A sandbox may end between the list and this read: show it without usage then.
    sandboxes.push(await api.getSandbox(s.id, { usage: true }).catch(() => s));
  }
  sandboxes.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  // Merges: a merged winner's record ends as `merged into <parent>` (service/lineage/lineage-merge.ts).
  const shown = new Set(sandboxes.map((s) => s.id));
  const merges: DashboardData['merges'] = [];
  for (const s of await api.listSandboxes({ namespace: '*', all: true })) {
    const into = MERGED_INTO.exec(s.endReason ?? '')?.[1];
    if (into !== undefined && shown.has(into)) merges.push({ winner: s.id, into });
  }
  const snaps = await api.listSnapshots().catch(() => []);
  const snapshots = [...snaps].sort((a, b) => b.createdAt.localeCompare(a.createdAt)).slice(0, MAX_SHOWN);
  return { sandboxes, more: all.length - newest.length, snapshots, merges: merges.slice(-MAX_SHOWN) };
}
