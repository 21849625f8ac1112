import { z } from 'zod';
import { defineTool, HINTS } from '../tool-kit.ts';

export const systemStatus = defineTool({
  name: 'system_status',
  title: 'forkbox status',
  description:
    'forkbox version, runtime, capabilities (fork of live process state, pause, enforced limits, network) and counts of sandboxes by state and of warm templates.',
  annotations: HINTS.read,
  input: z.object({}),
  output: z.object({
    version: z.string(),
    runtime: z.string(),
    capabilities: z.object({
      fork_process_state: z.boolean(),
      pause: z.boolean(),
      limits: z.object({ memory: z.boolean(), pids: z.boolean(), cpu: z.boolean(), disk: z.boolean() }),
      network: z.boolean(),
    }),
    sandboxes: z.record(z.string(), z.number()),
    templates: z.number(),
  }),
  async run(_a, { api }) {
    const s = await api.status();
    return {
      structured: {
        version: s.version,
        runtime: s.runtime,
        capabilities: {
          fork_process_state: s.capabilities.forkProcessState,
          pause: s.capabilities.pause,
          limits: s.capabilities.limits,
          network: s.capabilities.network,
        },
        sandboxes: s.sandboxes,
        templates: s.templates,
      },
    };
  },
});
