import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { attachmentsOf } from './attach.ts';
import { devbenchErrorText } from './errors.ts';

/**
 * DevBench's gauges in Prometheus text, computed from what the caller can see (its running containers,
 * their attachments and memory). DevBench's process-wide counters (spawns, execs, fs operations) are not
 * kept: forkbox's own counters are on the HTTP listener's /metrics.
 */
export const metrics = compatTool(
  {
    name: 'metrics',
    title: 'Metrics',
    description: 'Prometheus metrics (text format): active containers, attachments, memory per container.',
    annotations: HINTS.read,
    input: z.object({}),
    async run(_a, { api }) {
      const live = (await api.listSandboxes()).filter((x) => x.state === 'running').slice(0, 1000);
      const lines = [
        '# HELP mcp_devbench_active_containers Number of active containers',
        '# TYPE mcp_devbench_active_containers gauge',
        `mcp_devbench_active_containers ${live.length}`,
        '# HELP mcp_devbench_active_attachments Number of active attachments',
        '# TYPE mcp_devbench_active_attachments gauge',
        `mcp_devbench_active_attachments ${attachmentsOf(live.map((x) => x.id))}`,
        '# HELP mcp_devbench_memory_usage_bytes Container memory usage in bytes',
        '# TYPE mcp_devbench_memory_usage_bytes gauge',
      ];
      for (const s of live.slice(0, 100)) {
        const u = await api.getSandbox(s.id, { usage: true }).then(
          (x) => x.usage,
          () => undefined,
        );
        if (u) lines.push(`mcp_devbench_memory_usage_bytes{container_id="${s.id}"} ${u.memoryBytes}`);
      }
      return { metrics: `${lines.join('\n')}\n` };
    },
  },
  devbenchErrorText,
);
