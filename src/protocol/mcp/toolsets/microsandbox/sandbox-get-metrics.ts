import { z } from 'zod';
import { MiB } from '../../../../domain/sizes.ts';
import type { ForkboxApi, SandboxInfo } from '../../../../service/api.ts';
import { namespaceSchema } from '../../../bounds.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { sandboxArg } from './shapes.ts';
import { msbTool } from './tool.ts';

/** Usage reads in flight at once (each is a few cgroup and disk reads in the daemon). */
const BATCH = 8;

/** microsandbox's metrics entry, from forkbox's sandbox and its usage. */
function entry(sb: SandboxInfo, now: number) {
  const u = sb.usage;
  const lifeNs = Math.max(1, now - Date.parse(sb.createdAt)) * 1e6;
  return {
    namespace: sb.namespace,
    name: sb.name,
    running: sb.state === 'running',
    cpu_usage: u ? Math.round((u.cpuUsageNs / lifeNs) * 10000) / 100 : null,
    memory_usage: u ? Math.round(u.memoryBytes / MiB) : null,
    disk_usage: u ? u.diskBytes : null,
  };
}

async function withUsage(api: ForkboxApi, list: SandboxInfo[]): Promise<SandboxInfo[]> {
  const out: SandboxInfo[] = [];
  for (let i = 0; i < list.length; i += BATCH) {
    const part = list.slice(i, i + BATCH);
    // A sandbox that ended between the list and the read is reported without usage.
    out.push(
      ...(await Promise.all(part.map((sb) => api.getSandbox(sb.id, { usage: true }).catch(() => sb)))),
    );
  }
  return out;
}

/**
 * `{sandboxes: [{namespace, name, running, cpu_usage, memory_usage, disk_usage}]}` for the live
 * sandboxes of `namespace` (`*`: every namespace the caller may see), or only the one named `sandbox`.
 * `running` is false for a paused sandbox. `cpu_usage` is the percentage of one CPU used on average
 * since the sandbox started (forkbox keeps cumulative CPU time, not a recent rate), `memory_usage` MiB,
 * `disk_usage` the bytes of the sandbox's own writes. A stopped sandbox is gone (sandbox_stop removes
 * it), so it is not listed.
 */
export const sandboxGetMetrics = msbTool({
  name: 'sandbox_get_metrics',
  title: 'Get sandbox metrics',
  description:
    "Get metrics and status for sandboxes including CPU usage, memory consumption, and running state. Use namespace '*' for all namespaces.",
  annotations: HINTS.read,
  input: z.object({
    sandbox: sandboxArg.optional().describe('Optional specific sandbox name to get metrics for'),
    namespace: namespaceSchema({ all: true }).describe("Namespace to query (use '*' for all namespaces)"),
  }),
  async run(a, { api }) {
    const listed = await api.listSandboxes({ namespace: a.namespace });
    const picked = a.sandbox === undefined ? listed : listed.filter((sb) => sb.name === a.sandbox);
    const now = Date.now();
    return { sandboxes: (await withUsage(api, picked)).map((sb) => entry(sb, now)) };
  },
});
