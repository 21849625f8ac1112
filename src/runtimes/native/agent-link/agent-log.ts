/**
 * The agent's `log` frames (docs/AGENT-PROTOCOL.md, "log"), relayed to the daemon's logger. The text comes
 * from inside a sandbox: it is validated, cut, stripped of control characters, rate-limited per connection
 * and logged as a field under a fixed message, never as the message itself.
 */
import { z } from 'zod';
import type { Logger } from '../../../domain/logger.ts';

/** Characters of one agent line kept (the agent sends at most 2000). */
export const AGENT_LOG_MAX_CHARS = 2000;
/** Lines per second relayed per connection, and the burst allowed. */
export const AGENT_LOG_RATE_PER_S = 5;
export const AGENT_LOG_BURST = 20;

const logSchema = z.object({
  t: z.literal('log'),
  level: z.enum(['info', 'warn', 'error']).catch('info'),
  msg: z.string().max(64 * 1024),
  dropped: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
});

/** C0 and C1 controls but tab and newline (pino escapes those), DEL, and bidi overrides and isolates. */
function unsafe(cp: number): boolean {
  if (cp === 0x09 || cp === 0x0a) return false;
  return (
    cp < 0x20 ||
    (cp >= 0x7f && cp <= 0x9f) ||
    (cp >= 0x202a && cp <= 0x202e) ||
    (cp >= 0x2066 && cp <= 0x2069)
  );
}

export function sanitizeAgentText(text: string): string {
  let out = '';
  let n = 0;
  for (const ch of text) {
    if (n++ >= AGENT_LOG_MAX_CHARS) break;
    out += unsafe(ch.codePointAt(0) ?? 0) ? '\ufffd' : ch;
  }
  return out;
}

export interface AgentLogRelay {
  /** Relays one log frame; false when the frame is malformed (a protocol violation). */
  take(header: unknown): boolean;
}

/**
 * `take(header)` relays one log frame; returns false when the frame is malformed (a protocol violation).
 * Lines over the rate are counted and the count is reported with the next line relayed.
 */
export function createAgentLogRelay(
  sandboxId: string,
  log: Pick<Logger, 'info' | 'warn' | 'error'> | undefined,
  now: () => number = () => performance.now(),
): AgentLogRelay {
  let tokens = AGENT_LOG_BURST;
  let last = now();
  let suppressed = 0;
  return {
    take(header: unknown): boolean {
      const parsed = logSchema.safeParse(header);
      if (!parsed.success) return false;
      if (log === undefined) return true;
      const t = now();
      tokens = Math.min(AGENT_LOG_BURST, tokens + ((t - last) / 1000) * AGENT_LOG_RATE_PER_S);
      last = t;
      if (tokens < 1) {
        suppressed += 1;
        return true;
      }
      tokens -= 1;
      const { level, msg, dropped } = parsed.data;
      const fields = {
        sandbox: sandboxId,
        agentLevel: level,
        text: sanitizeAgentText(msg),
        ...(dropped ? { droppedByAgent: dropped } : {}),
        ...(suppressed > 0 ? { droppedByHost: suppressed } : {}),
      };
      suppressed = 0;
      // Never the daemon's error level: the source is untrusted and may say anything.
      if (level === 'info') log.info(fields, 'sandbox agent log');
      else log.warn(fields, 'sandbox agent log');
      return true;
    },
  };
}
