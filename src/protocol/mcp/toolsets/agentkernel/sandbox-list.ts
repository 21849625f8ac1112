import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { akTool } from './tool.ts';

/**
 * agentkernel's table: NAME, STATUS (running, or stopped for a paused sandbox), BACKEND (`forkbox`), IP
 * (`-`: a sandbox has no address of its own on the host) and PORTS (`HOST:SANDBOX`, published on
 * 127.0.0.1).
 */
export const sandboxList = akTool({
  name: 'sandbox_list',
  title: 'List sandboxes',
  description: 'List all sandboxes and their status.',
  annotations: HINTS.read,
  input: z.object({}),
  async run(_a, { api }) {
    const live = (await api.listSandboxes()).filter((s) => s.state === 'running' || s.state === 'paused');
    if (live.length === 0) return 'No sandboxes found.';
    const rows = live.map((s) => {
      const status = s.state === 'running' ? 'running' : 'stopped';
      const ports = (s.ports ?? []).map((p) => `${p.hostPort}:${p.port}`).join(', ');
      return `${s.name}\t${status}\tforkbox\t-\t${ports}\n`;
    });
    return `NAME\tSTATUS\tBACKEND\tIP\tPORTS\n${rows.join('')}`;
  },
});
