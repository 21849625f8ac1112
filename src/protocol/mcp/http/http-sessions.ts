/**
 * The table of 2025-11-25 MCP sessions on the HTTP listener, and the rules that keep it from locking a
 * token out:
 *
 * - a session is **live** while it has a request or stream open, or had one in the last `liveMs`
 *   (default 60 s); only live sessions count toward the per-tenant limit;
 * - opening a session at the limit closes the tenant's least recently used session that is not live
 *   (its sandboxes then follow the grace rule of session-policy.ts, and a client that comes back with its
 *   id gets it resumed); when every session is live the refusal (HTTP 429) names the limit and says when
 *   the next slot frees, with `Retry-After`;
 * - a session with no request for `idleMs` (default 10 min) is closed the same way;
 * - the whole table holds at most `maxTotal` sessions (all tenants), evicting the least recently used
 *   idle ones first, so memory stays bounded whatever the clients do.
 */

export interface TableEntry {
  tenant: string;
  lastSeen: number;
  /** Requests and streams of this session still open. */
  active: number;
  /** Close it (`ended`: the client asked for it, so its sandboxes end at once). */
  close(opts?: { ended?: boolean }): Promise<void>;
}

export interface SessionLimits {
  /** Live sessions per tenant (default 32). */
  maxPerTenant: number;
  /** Sessions in the table, all tenants (default 4096). */
  maxTotal: number;
  /** How long after its last request a session still counts as live (default 60 s). */
  liveMs: number;
  /** A session with no request for this long is closed (default 10 min). */
  idleMs: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = {
  maxPerTenant: 32,
  maxTotal: 4096,
  liveMs: 60_000,
  idleMs: 10 * 60_000,
};

export type Admission =
  | { ok: true }
  | { ok: false; message: string; retryAfterS: number; limit: number; live: number };

export interface SessionTable<E extends TableEntry> {
  get(sid: string): E | undefined;
  set(sid: string, e: E): void;
  delete(sid: string): void;
  size(): number;
  values(): IterableIterator<E>;
  /** Make room for one more session of `tenant`, closing idle ones; or say why not. */
  admit(tenant: string): Admission;
  /** Close idle sessions (called periodically). */
  sweep(): void;
}

export function createSessionTable<E extends TableEntry>(
  limits: SessionLimits,
  now: () => number = Date.now,
): SessionTable<E> {
  const map = new Map<string, E>();
  const isLive = (e: E, t: number) => e.active > 0 || t - e.lastSeen < limits.liveMs;
  const evict = (sid: string, e: E) => {
    map.delete(sid);
    void e.close();
  };
  /** The least recently used session (of `tenant`, when given) that is not live. */
  const lruIdle = (t: number, tenant?: string) => {
    let best: [string, E] | undefined;
    for (const [sid, e] of map) {
      if (tenant !== undefined && e.tenant !== tenant) continue;
      if (isLive(e, t)) continue;
      if (!best || e.lastSeen < best[1].lastSeen) best = [sid, e];
    }
    return best;
  };

  return {
    get: (sid) => map.get(sid),
    set: (sid, e) => void map.set(sid, e),
    delete: (sid) => void map.delete(sid),
    size: () => map.size,
    values: () => map.values(),
    admit(tenant) {
      const t = now();
      const mine = [...map.values()].filter((e) => e.tenant === tenant);
      const live = mine.filter((e) => isLive(e, t));
      if (mine.length >= limits.maxPerTenant) {
        const idle = lruIdle(t, tenant);
        if (idle) evict(...idle);
        else {
          // Every session is live: the first to go quiet frees a slot liveMs after its last request.
          const quiet = live.filter((e) => e.active === 0).map((e) => e.lastSeen + limits.liveMs - t);
          const retryAfterS = Math.max(
            1,
            Math.ceil((quiet.length ? Math.min(...quiet) : limits.liveMs) / 1000),
          );
          return {
            ok: false,
            limit: limits.maxPerTenant,
            live: live.length,
            retryAfterS,
            message: `too many live MCP sessions for tenant '${tenant}': the limit is ${limits.maxPerTenant} live sessions per tenant (a session is live while it has a request or stream open, or had one in the last ${Math.round(limits.liveMs / 1000)} s; idle ones do not count and are closed to make room). A slot frees in about ${retryAfterS} s if one goes quiet; close sessions you no longer need with HTTP DELETE /mcp, or use the stateless 2026-07-28 protocol.`,
          };
        }
      }
      while (map.size >= limits.maxTotal) {
        const idle = lruIdle(t);
        if (!idle) {
          return {
            ok: false,
            limit: limits.maxTotal,
            live: map.size,
            retryAfterS: Math.ceil(limits.liveMs / 1000),
            message: `the listener holds its maximum of ${limits.maxTotal} live MCP sessions (all tenants). Retry later, or use the stateless 2026-07-28 protocol.`,
          };
        }
        evict(...idle);
      }
      return { ok: true };
    },
    sweep() {
      const cutoff = now() - limits.idleMs;
      for (const [sid, e] of map) if (e.active === 0 && e.lastSeen < cutoff) evict(sid, e);
    },
  };
}
