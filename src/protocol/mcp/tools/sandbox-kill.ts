import { z } from 'zod';
import { sandboxOut, sandboxShape } from '../shapes.ts';
import { defineTool, HINTS, sandboxArg } from '../tool-kit.ts';

export const sandboxKill = defineTool({
  name: 'sandbox_kill',
  title: 'Kill a sandbox',
  description:
    "Kill a sandbox and delete its filesystem, processes and REPL state. Irreversible. Its child sandboxes (forks) keep running unless `cascade` is true. Without `sandbox`, kills this connection's default sandbox (the next call without `sandbox` creates a fresh one).",
  annotations: HINTS.destroy,
  input: z.object({
    sandbox: sandboxArg,
    cascade: z.boolean().optional().describe('Also kill its descendants (default false: they keep running).'),
  }),
  output: sandboxShape,
  async run(a, { api, sandbox }) {
    const id = await sandbox(a.sandbox);
    return { structured: sandboxOut(await api.killSandbox(id, a.cascade ? { cascade: true } : {})) };
  },
});
