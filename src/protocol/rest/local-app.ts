/**
 * The daemon's local API: resource-oriented JSON routes under /v1, one per ForkboxApi method, served on
 * the daemon's Unix socket (transports/unix-server.ts) and called by transports/daemon-client.ts.
 * The handlers live in api-routes.ts (shared with the TCP listener, protocol/http/app.ts); this app adds
 * client sessions and the host administration routes, which only the socket serves.
 *
 * Every request but /healthz is audited (protocol/audit.ts): door `socket`, the app's tenant (the host's
 * own, `default`, or a local user's on the group socket), the
 * peer's uid/pid as the unix server read them (SO_PEERCRED, `env.peer`), the client's own name for
 * itself (`x-forkbox-client`: `cli`, `mcp-stdio`), the route, the sandbox in the path, the outcome and
 * the duration — once the response, streamed or not, is done.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import { streamText } from 'hono/streaming';
import { ForkboxError, toForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi } from '../../service/api.ts';
import { DEFAULT_TENANT } from '../../service/caller.ts';
import { type AuditLog, outcomeOf, reportErrors, sandboxInPath } from '../audit.ts';
import { onResponseDone } from '../http/limits.ts';
import { bodyLimits, mountApiRoutes } from './api-routes.ts';
import { toHttpError } from './errors.ts';
import { CLIENT_HEADER, SESSION_HEADER } from './wire.ts';

export interface LocalAppOptions {
  /** Reported by /healthz. */
  version?: string;
  /** Client sessions (the daemon's engine): requests naming a session act in it. */
  sessions?: {
    scoped(session: string): ForkboxApi;
    attach(session: string, opts?: { graceMs?: number }): () => void;
  };
  /** The daemon's audit log (shared with the TCP listener); absent: requests are not audited. */
  audit?: AuditLog | undefined;
  /** The tenant this app acts for, as audited; default the host's own (`default`). */
  tenant?: string;
  /**
   * Serve the host administration routes (images, templates define/delete, gc, df); default true. A
   * local user's app on the group socket (group-app.ts) has them refused with `permission_denied`.
   */
  admin?: boolean;
}

interface AuditScope {
  errorCode?: string;
}

/** What the unix server passes as `env` (transports/unix-server.ts, UnixEnv). */
interface PeerEnv {
  peer?: { uid: number; pid: number };
}

/** The audit middleware: one line per request once its response is done (see the module comment). */
function auditRequests(
  audit: AuditLog,
  als: AsyncLocalStorage<AuditScope>,
  tenant: string,
): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.path === '/healthz') return next();
    const scope: AuditScope = {};
    const started = performance.now();
    await als.run(scope, () => next());
    const route = routePath(c, -1);
    const matched = route !== '' && !route.endsWith('*') ? route : 'unmatched';
    const errorCode = scope.errorCode ?? (c.error ? toForkboxError(c.error).code : undefined);
    const peer = (c.env as PeerEnv | undefined)?.peer;
    const status = c.res.status;
    c.res = onResponseDone(c.res, () =>
      audit.write({
        door: 'socket',
        tenant,
        client: c.req.header(CLIENT_HEADER),
        uid: peer?.uid,
        pid: peer?.pid,
        route: `${c.req.method} ${matched}`,
        sandbox: sandboxInPath(c.req.path),
        // An error inside a streamed body (an exec's) is noted when the call fails, after this point.
        outcome: outcomeOf(scope.errorCode ?? errorCode, status),
        status,
        durationMs: performance.now() - started,
      }),
    );
  };
}

export { SESSION_HEADER };

const SESSION_RE = /^[A-Za-z0-9_-]{8,64}$/;
/** Longest grace a session may ask for: a day. */
const MAX_GRACE_MS = 24 * 3600_000;

function sessionOf(c: Context): string | undefined {
  const s = c.req.header(SESSION_HEADER);
  if (s === undefined) return undefined;
  if (!SESSION_RE.test(s)) {
    throw new ForkboxError('invalid_argument', `${SESSION_HEADER} must be 8-64 letters, digits, '_' or '-'.`);
  }
  return s;
}

/** Errors become `{error:{code,message}}` with the catalog's status; unknown routes are `not_found`. */
export function installErrorHandlers(app: OpenAPIHono): void {
  app.onError((err, c) => {
    const { status, body } = toHttpError(err);
    return c.json(body, status);
  });
  app.notFound((c) =>
    c.json(
      toHttpError(
        new ForkboxError(
          'not_found',
          `no route ${c.req.method} ${c.req.path}. See the API in /openapi.json.`,
        ),
      ).body,
      404,
    ),
  );
}

/** Typed as a plain Hono app: callers need only `fetch`/`request`, not the OpenAPI registry. */
export function createLocalApp(api: ForkboxApi, opts: LocalAppOptions = {}): Hono {
  const app = new OpenAPIHono();
  installErrorHandlers(app);
  const als = new AsyncLocalStorage<AuditScope>();
  // Failures of API calls (also those reported inside a streamed body) give the audit line its outcome.
  const noted = (a: ForkboxApi): ForkboxApi =>
    opts.audit
      ? reportErrors(a, (code) => {
          const scope = als.getStore();
          if (scope && scope.errorCode === undefined) scope.errorCode = code;
        })
      : a;
  const baseApi = noted(api);
  if (opts.audit) app.use('*', auditRequests(opts.audit, als, opts.tenant ?? DEFAULT_TENANT));
  app.use('*', bodyLimits());

  // A client session stays attached while this request is open; when the client goes away (process
  // exit, crash, disconnect), its non-persistent sandboxes are killed after a grace: `grace_ms`, else
  // the daemon's.
  app.post('/v1/sessions/:sid/attach', (c) => {
    const sid = c.req.param('sid');
    if (!SESSION_RE.test(sid) || !opts.sessions) {
      throw new ForkboxError('invalid_argument', 'session ids are 8-64 letters, digits, _ or -.');
    }
    const graceArg = c.req.query('grace_ms');
    const graceMs = graceArg === undefined ? undefined : Number(graceArg);
    if (graceMs !== undefined && !(Number.isInteger(graceMs) && graceMs >= 0 && graceMs <= MAX_GRACE_MS)) {
      throw new ForkboxError(
        'invalid_argument',
        `grace_ms must be a whole number from 0 to ${MAX_GRACE_MS}.`,
      );
    }
    const detach = opts.sessions.attach(sid, graceMs === undefined ? {} : { graceMs });
    return streamText(c, async (stream) => {
      stream.onAbort(detach);
      await stream.writeln(JSON.stringify({ type: 'attached', session: sid }));
      while (!stream.aborted && !stream.closed) {
        await stream.sleep(15_000);
        await stream.writeln(JSON.stringify({ type: 'heartbeat' }));
      }
      detach();
    });
  });

  app.get('/healthz', (c) => c.json({ ok: true, version: opts.version ?? null }));
  mountApiRoutes(app, {
    admin: opts.admin ?? true,
    // The API as seen by this request's caller (its session, when it names one).
    api: (c) => {
      const session = sessionOf(c);
      return session !== undefined && opts.sessions ? noted(opts.sessions.scoped(session)) : baseApi;
    },
  });
  return app as unknown as Hono;
}
