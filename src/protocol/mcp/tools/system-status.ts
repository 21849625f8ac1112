import { z } from 'zod';
import { defineTool, HINTS } from '../kit/tool-kit.ts';

export const systemStatus = defineTool({
  name: 'system_status',
  title: 'forkbox status',
  description: 'forkbox version, capabilities here, and sandbox counts by state.',
  annotations: HINTS.read,
  input: z.object({}),
  output: z.object({
    version: z.string(),
    runtime: z.string(),
    capabilities: z.array(z.string()),
    sandboxes: z.record(z.string(), z.number()),
    templates: z.number(),
  }),
  async run(_a, { api }) {
    const s = await api.status();
    return {
      structured: {
        version: s.version,
        runtime: s.runtime,
        capabilities: Object.entries({
          fork_process_state: s.capabilities.forkProcessState,
          pause: s.capabilities.pause,
          memory_limit: s.capabilities.limits.memory,
          pids_limit: s.capabilities.limits.pids,
          cpu_limit: s.capabilities.limits.cpu,
          disk_limit: s.capabilities.limits.disk,
          network: s.capabilities.network,
        }).flatMap(([k, on]) => (on ? [k] : [])),
        sandboxes: s.sandboxes,
        templates: s.templates,
      },
    };
  },
});
