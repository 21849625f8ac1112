import { z } from 'zod';
import { HINTS } from '../../kit/tool-kit.ts';
import { durationSeconds, nameArg } from './shapes.ts';
import { akTool } from './tool.ts';

/**
 * agentkernel's extend ADDS `by` to the sandbox's current expiry (forkbox's sandbox_extend sets it from
 * now): the new TTL is (expiry + by) - now, in whole seconds rounded up. A sandbox without an expiry
 * keeps none (it already lives until sandbox_remove), answered as agentkernel did. Past forkbox's longest
 * TTL (30 days from now) the extension is refused.
 */
export const sandboxExtendTtl = akTool({
  name: 'sandbox_extend_ttl',
  title: "Extend a sandbox's TTL",
  description: "Extend a sandbox's time-to-live. Adds additional time to the current expiry.",
  annotations: HINTS.write,
  input: z.object({
    name: nameArg,
    by: z.string().max(40).optional().describe("Additional time (e.g., '1h', '30m', '2d'). Default: 1h"),
  }),
  async run(a, { api }) {
    const add = durationSeconds(a.by ?? '1h');
    const s = await api.getSandbox(a.name);
    if (s.expiresAt === null) return `Sandbox '${a.name}' now has no expiry (TTL disabled).`;
    const target = Date.parse(s.expiresAt) + add * 1000;
    const ttl = Math.max(1, Math.ceil((target - Date.now()) / 1000));
    const after = await api.extendSandbox(s.id, ttl);
    return `Extended TTL for sandbox '${a.name}'. New expiry: ${after.expiresAt}`;
  },
});
