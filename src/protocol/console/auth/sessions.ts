/**
 * The console's sessions, kept in the daemon: the cookie carries only a random, opaque id (256 bits), never
 * the caller's token. A session ends at logout, at its expiry (12 hours after login, however busy), when
 * its token stops authenticating (removed from the token file, an expired JWT: every request checks the
 * token again), or when the daemon stops (sessions live in its memory: log in again after a restart). A
 * leaked cookie value is worth one session of one console, not the token behind it: it authenticates no
 * REST or MCP call, and logout revokes it.
 *
 * Bounded: at most `perTenant` sessions per tenant and `total` in all; a new login past a bound ends the
 * oldest session of that tenant (or the oldest of all).
 */
import { randomBytes } from 'node:crypto';

export interface ConsoleSession {
  token: string;
  tenant: string;
  expiresAt: number;
}

export interface ConsoleSessions {
  /** A new session for `token` (which authenticated as `tenant`); its id, for the cookie. */
  open(token: string, tenant: string): string;
  /** The live session of cookie value `id`, or undefined (unknown, ended or expired). */
  get(id: string | undefined): ConsoleSession | undefined;
  /** End session `id` (logout); unknown ids are ignored. */
  end(id: string | undefined): void;
  size(): number;
}

export interface ConsoleSessionOptions {
  ttlMs: number;
  perTenant?: number;
  total?: number;
  now?: () => number;
}

export const SESSION_BOUNDS = { perTenant: 64, total: 4096 } as const;

const ID_RE = /^[A-Za-z0-9_-]{43}$/;

export function createConsoleSessions(opts: ConsoleSessionOptions): ConsoleSessions {
  const now = opts.now ?? Date.now;
  const perTenant = opts.perTenant ?? SESSION_BOUNDS.perTenant;
  const total = opts.total ?? SESSION_BOUNDS.total;
  // Insertion order is login order: the first entry of a tenant is its oldest.
  const sessions = new Map<string, ConsoleSession>();

  function sweep(): void {
    const t = now();
    for (const [id, s] of sessions) if (s.expiresAt <= t) sessions.delete(id);
  }
  function oldest(tenant?: string): string | undefined {
    for (const [id, s] of sessions) if (tenant === undefined || s.tenant === tenant) return id;
    return undefined;
  }
  return {
    open(token, tenant) {
      sweep();
      const mine = [...sessions.values()].filter((s) => s.tenant === tenant).length;
      if (mine >= perTenant) sessions.delete(oldest(tenant) as string);
      else if (sessions.size >= total) sessions.delete(oldest() as string);
      const id = randomBytes(32).toString('base64url');
      sessions.set(id, { token, tenant, expiresAt: now() + opts.ttlMs });
      return id;
    },
    get(id) {
      if (id === undefined || !ID_RE.test(id)) return undefined;
      const s = sessions.get(id);
      if (!s) return undefined;
      if (s.expiresAt <= now()) {
        sessions.delete(id);
        return undefined;
      }
      return s;
    },
    end(id) {
      if (id !== undefined) sessions.delete(id);
    },
    size: () => sessions.size,
  };
}
