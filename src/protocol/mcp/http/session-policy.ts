/**
 * What happens to an MCP client's work when the client goes away (docs/MCP-CLIENTS.md, "When a client
 * goes away"). One rule for both transports: a session's sandboxes that were not made `persistent` — its
 * default sandbox with its REPL state included — outlive the end of the session's connection by a grace
 * period (default 10 minutes; `forkbox mcp --session-grace`, `forkbox serve --mcp-session-grace`),
 * whether the client closed cleanly, crashed or lost its transport. A client that comes back within the
 * grace finds them again: over stdio with the same `--session NAME`, over HTTP with its `Mcp-Session-Id`
 * (2025-11-25) or its token (2026-07-28, whose default sandbox is per token and never ends with a
 * connection). Only an explicit end — HTTP DELETE of the session — removes them at once.
 *
 * Calls in flight when a connection closes are cancelled (the SDK aborts their signal; the tools hand it
 * to the engine). Commands started with exec_start are detached by design and keep running.
 */
import { createHash } from 'node:crypto';

export const DEFAULT_SESSION_GRACE_MS = 10 * 60_000;
/** The longest grace a session may ask for (the daemon refuses more). */
export const MAX_SESSION_GRACE_MS = 24 * 3600_000;

const hash = (s: string) => createHash('sha256').update(s).digest('hex');

/** The engine session id of a named stdio session: stable, so a new `forkbox mcp` re-attaches it. */
export function namedSessionId(name: string): string {
  return `mcp-${hash(`forkbox.mcp-session\0${name}`).slice(0, 40)}`;
}

/**
 * The owner key on a default sandbox (DEFAULT_OWNER_LABEL) for a scope that outlives one connection:
 * a named stdio session, or a token of the stateless HTTP era. A hash, never the name or token itself:
 * labels are visible to everyone in the tenant.
 */
export function defaultSandboxOwner(kind: 'stdio' | 'token', key: string): string {
  return hash(`forkbox.mcp-default\0${kind === 'stdio' ? `stdio\0${key}` : key}`).slice(0, 16);
}

/** Session names: what a user types in a client's config. */
export const SESSION_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$/;
