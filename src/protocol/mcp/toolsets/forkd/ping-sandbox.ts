import { z } from 'zod';
import { compatTool } from '../../kit/compat-tool.ts';
import { HINTS } from '../../kit/tool-kit.ts';
import { forkdErrorText } from './errors.ts';
import { sandboxIdArg } from './shapes.ts';

/** Asks the REPL for numpy's version without naming anything in the caller's namespace. */
const PROBE = "print(__import__('numpy').__version__)";

/** `pid` is 1: forkbox's agent is its sandbox's PID 1, as forkd's was. numpy_version null: no numpy. */
export const pingSandbox = compatTool(
  {
    name: 'ping_sandbox',
    title: 'Ping sandbox',
    description: "Health-check a sandbox's Python: {pong, numpy_version, pid}.",
    annotations: HINTS.read,
    input: z.object({ sandbox_id: sandboxIdArg }),
    async run(a, { api, signal }) {
      const r = await api.runCode(a.sandbox_id, { code: PROBE, timeoutSeconds: 60 }, { signal });
      return { pong: true, numpy_version: r.ok ? r.stdout.trim() : null, pid: 1 };
    },
  },
  forkdErrorText,
);
