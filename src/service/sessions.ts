/**
 * Client sessions (a stdio MCP connection, a CLI session): while one is attached its non-persistent
 * sandboxes live; when the last attachment goes, after a grace period, they are killed.
 */
import type { Logger } from '../domain/logger.ts';
import type { SandboxRecord } from '../domain/types.ts';
import type { Store } from './ports.ts';

export interface SessionDeps {
  store: Store;
  log: Pick<Logger, 'warn'>;
  kill(rec: SandboxRecord, reason: string): Promise<unknown>;
  /** How long a session may stay detached before its sandboxes are killed. */
  graceMs: number;
}

export interface Sessions {
  /** A client attached to session `id`; returns the detach function. */
  attach(id: string): () => void;
  /** Sessions recorded on live sandboxes but attached to nobody (after a restart) end after `graceMs`. */
  expireOrphans(graceMs: number): void;
  close(): void;
}

export function createSessions(deps: SessionDeps): Sessions {
  const { store, log } = deps;
  const sessions = new Map<string, { attached: number; timer: NodeJS.Timeout | null }>();

  function scheduleEnd(id: string, graceMs: number): void {
    const s = sessions.get(id) ?? { attached: 0, timer: null };
    sessions.set(id, s);
    if (s.timer) clearTimeout(s.timer);
    s.timer = setTimeout(() => {
      if (s.attached > 0) return;
      sessions.delete(id);
      for (const rec of store.listSandboxes({ session: id, states: ['running', 'paused'] })) {
        deps
          .kill(rec, 'its client session ended (create it with persistent: true to keep it)')
          .catch((e: unknown) => log.warn({ sandbox: rec.id, err: String(e) }, 'session cleanup failed'));
      }
    }, graceMs);
    s.timer.unref?.();
  }

  return {
    attach(id) {
      const s = sessions.get(id) ?? { attached: 0, timer: null };
      sessions.set(id, s);
      s.attached++;
      if (s.timer) clearTimeout(s.timer);
      s.timer = null;
      let done = false;
      return () => {
        if (done) return;
        done = true;
        s.attached--;
        if (s.attached === 0) scheduleEnd(id, deps.graceMs);
      };
    },
    expireOrphans(graceMs) {
      const orphaned = new Set(
        store.listSandboxes({ states: ['running', 'paused'] }).flatMap((r) => (r.session ? [r.session] : [])),
      );
      for (const id of orphaned) if (!sessions.has(id)) scheduleEnd(id, graceMs);
    },
    close() {
      for (const s of sessions.values()) if (s.timer) clearTimeout(s.timer);
    },
  };
}
