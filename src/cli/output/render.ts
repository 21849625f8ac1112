/** Human renderings of API records (the --json output is the records themselves). */
import type { SandboxInfo } from '../../service/api.ts';
import { formatBytes, formatRelative, table } from './output.ts';

/** The NAMESPACE column only when a listed sandbox is outside `default` (as kubectl shows it for -A). */
export function sandboxTable(list: SandboxInfo[]): string {
  if (list.length === 0) return 'no sandboxes';
  const withNs = list.some((s) => s.namespace !== 'default');
  const head = ['ID', 'NAME', 'STATE', 'IMAGE', 'DEPTH', 'CREATED', 'EXPIRES'];
  return table(
    withNs ? ['ID', 'NAMESPACE', ...head.slice(1)] : head,
    list.map((s) => {
      const row = [
        s.id,
        s.name,
        s.state,
        s.image,
        String(s.depth),
        formatRelative(s.createdAt),
        formatRelative(s.expiresAt),
      ];
      return withNs ? [s.id, s.namespace, ...row.slice(1)] : row;
    }),
  );
}

function diskLimit(s: SandboxInfo): string {
  if (s.limits.diskBytes <= 0) return 'not limited';
  return `${formatBytes(s.limits.diskBytes)}, ${s.limits.diskInodes} inodes`;
}

function diskUsed(s: SandboxInfo): string {
  const u = s.usage;
  if (!u) return '-';
  const of = (used: string, limit: string) => (s.limits.diskBytes > 0 ? `${used} of ${limit}` : used);
  const bytes = of(formatBytes(u.diskBytes), formatBytes(s.limits.diskBytes));
  if (u.diskInodes === null) return bytes;
  return `${bytes}; ${of(String(u.diskInodes), String(s.limits.diskInodes))} inodes`;
}

export function sandboxDetail(s: SandboxInfo): string {
  const rows: [string, string][] = [
    ['id', s.id],
    ['name', s.name],
    ['state', s.state],
    ['image', s.image],
    ['runtime', s.runtime],
    ['parent', s.parentId ?? '-'],
    ['depth', String(s.depth)],
    ['memory', formatBytes(s.limits.memoryBytes)],
    ['cpus', String(s.limits.cpus)],
    ['pids', String(s.limits.pids)],
    ['disk', diskLimit(s)],
    ['network', s.network],
    ['created', `${s.createdAt} (${formatRelative(s.createdAt)})`],
    ['expires', s.expiresAt === null ? 'never' : `${s.expiresAt} (${formatRelative(s.expiresAt)})`],
  ];
  const labels = Object.entries(s.labels);
  if (labels.length > 0) rows.push(['labels', labels.map(([k, v]) => `${k}=${v}`).join(', ')]);
  if (s.endReason !== null) rows.push(['ended', s.endReason]);
  if (s.usage) {
    rows.push(['mem used', formatBytes(s.usage.memoryBytes)]);
    rows.push(['cpu time', `${(s.usage.cpuUsageNs / 1e9).toFixed(2)}s`]);
    rows.push(['processes', String(s.usage.pids)]);
    rows.push(['disk used', diskUsed(s)]);
    if (s.usage.oomKills > 0) rows.push(['oom kills', String(s.usage.oomKills)]);
  }
  const w = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join('\n');
}
