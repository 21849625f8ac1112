/**
 * The group socket's app (`forkbox serve --socket-group GROUP`): one local API per local user. The peer's
 * uid (SO_PEERCRED, read by transports/unix-server.ts at accept and passed as `env.peer`) picks the
 * tenant: uid 0 is the host's own tenant with the host administration routes, like the state dir's
 * socket; any other uid is tenant `uid-<uid>`, scoped like a remote token's tenant (`remote`: no host
 * projects, no image pulls outside --image-allow) and without the host administration routes
 * (`permission_denied`). A connection whose credentials could not be read is refused.
 */
import type { Hono } from 'hono';
import { ForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi } from '../../service/api.ts';
import type { CallerContext } from '../../service/caller.ts';
import { DEFAULT_TENANT } from '../../service/caller.ts';
import type { AuditLog } from '../audit.ts';
import { toHttpError } from './errors.ts';
import { createLocalApp } from './local-app.ts';

/** The tenant of a local user on the group socket. */
export const tenantOfUid = (uid: number): string => (uid === 0 ? DEFAULT_TENANT : `uid-${uid}`);

export interface GroupAppOptions {
  /** The engine's tenant-scoped API (service/engine.ts `scoped`). */
  scoped(ctx: CallerContext): ForkboxApi;
  attach(session: string, opts?: { graceMs?: number }): () => void;
  /** The host's own app (uid 0), the same as the state dir's socket serves. */
  hostApp: Hono;
  version?: string;
  audit?: AuditLog | undefined;
}

interface PeerEnv {
  peer?: { uid: number; pid: number };
}

interface FetchApp {
  fetch: (request: Request, env?: unknown) => Response | Promise<Response>;
}

export function createGroupApp(opts: GroupAppOptions): FetchApp {
  // One app per local user, made at their first request; the group's members bound how many there are.
  const apps = new Map<number, Hono>();
  const appFor = (uid: number): Hono => {
    let app = apps.get(uid);
    if (app) return app;
    const tenant = tenantOfUid(uid);
    // A user's session ids are their own: prefixed with the tenant, one user cannot attach (and so end)
    // another's session.
    const own = (session: string) => `${tenant}.${session}`;
    app = createLocalApp(opts.scoped({ tenant, remote: true }), {
      ...(opts.version === undefined ? {} : { version: opts.version }),
      audit: opts.audit,
      tenant,
      admin: false,
      sessions: {
        scoped: (session) => opts.scoped({ tenant, session: own(session), remote: true }),
        attach: (session, o) => opts.attach(own(session), o),
      },
    });
    apps.set(uid, app);
    return app;
  };
  return {
    fetch(request, env) {
      const peer = (env as PeerEnv | undefined)?.peer;
      if (peer === undefined) {
        const { status, body } = toHttpError(
          new ForkboxError(
            'permission_denied',
            "the daemon could not read this connection's peer credentials, so it cannot tell whose tenant it is.",
          ),
        );
        return Response.json(body, { status });
      }
      return (peer.uid === 0 ? opts.hostApp : appFor(peer.uid)).fetch(request, env);
    },
  };
}
