import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { auditEvent } from './audit.ts';
import { devbenchErrorText } from './errors.ts';
import { inputData } from './shapes.ts';

/**
 * Attachments (client sessions that said they use a container), kept by this server process as DevBench
 * kept them in its database: by container id, bounded. They decide nothing; system_status counts those
 * of the caller's containers.
 */
const MAX_ATTACHMENTS = 10_000;
const attachments = new Map<string, Set<string>>();
let total = 0;

export function attachmentsOf(ids: Iterable<string>): number {
  let n = 0;
  for (const id of ids) n += attachments.get(id)?.size ?? 0;
  return n;
}

export function detachAll(id: string): void {
  total -= attachments.get(id)?.size ?? 0;
  attachments.delete(id);
}

export const attach = compatTool(
  {
    name: 'attach',
    title: 'Attach',
    description: 'Attach a client to a container (by id or alias) for session tracking.',
    annotations: HINTS.write,
    input: inputData({
      target: z.string().min(1).max(128).describe('Container ID or alias to attach to'),
      client_name: z.string().min(1).max(128).describe('Name of the client attaching'),
      session_id: z.string().min(1).max(128).describe('Unique session ID for this attachment'),
    }),
    async run({ input_data: a }, { api, log }) {
      const s = await api.getSandbox(a.target);
      const set = attachments.get(s.id) ?? new Set<string>();
      if (!set.has(a.session_id) && total < MAX_ATTACHMENTS) {
        set.add(a.session_id);
        total += 1;
        attachments.set(s.id, set);
      }
      auditEvent(log, 'container_attach', {
        container_id: s.id,
        client_name: a.client_name,
        session_id: a.session_id,
      });
      return { container_id: s.id, alias: s.name === s.id ? null : s.name, roots: [`workspace:${s.id}`] };
    },
  },
  devbenchErrorText,
);
