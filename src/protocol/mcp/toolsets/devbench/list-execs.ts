import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { devbenchErrorText } from './errors.ts';
import { devbenchExecId } from './ids.ts';

/** Running execs of your containers, at most 100 as DevBench. `as_root` is null: forkbox ignores it. */
export const listExecs = compatTool(
  {
    name: 'list_execs',
    title: 'List execs',
    description: 'List active command executions (at most 100).',
    annotations: HINTS.read,
    input: z.object({}),
    async run(_a, { api }) {
      const out: Record<string, unknown>[] = [];
      for (const s of await api.listSandboxes()) {
        if (out.length >= 100) break;
        if (s.state !== 'running') continue;
        for (const e of await api.listExecs(s.id)) {
          if (e.state !== 'running' || out.length >= 100) continue;
          out.push({
            exec_id: devbenchExecId(s.id, e.id),
            container_id: s.id,
            cmd: e.command,
            as_root: null,
            started_at: new Date(e.startedAt).toISOString(),
            status: 'running',
          });
        }
      }
      return { execs: out };
    },
  },
  devbenchErrorText,
);
