/**
 * The daemon's local API: resource-oriented JSON routes under /v1, one per ForkboxApi method, served on
 * the daemon's Unix socket (transports/unix-server.ts) and called by transports/daemon-client.ts.
 * The handlers live in api-routes.ts (shared with the TCP listener, protocol/http/app.ts); this app adds
 * client sessions and the host administration routes, which only the socket serves.
 */
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context, Hono } from 'hono';
import { streamText } from 'hono/streaming';
import { ForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi } from '../../service/api.ts';
import { bodyLimits, mountApiRoutes } from './api-routes.ts';
import { toHttpError } from './errors.ts';
import { SESSION_HEADER } from './wire.ts';

export interface LocalAppOptions {
  /** Reported by /healthz. */
  version?: string;
  /** Client sessions (the daemon's engine): requests naming a session act in it. */
  sessions?: {
    scoped(session: string): ForkboxApi;
    attach(session: string): () => void;
  };
}

export { SESSION_HEADER };

const SESSION_RE = /^[A-Za-z0-9_-]{8,64}$/;

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
  app.use('*', bodyLimits());

  // A client session stays attached while this request is open; when the client goes away (process
  // exit, crash, disconnect), its non-persistent sandboxes are killed after a short grace.
  app.post('/v1/sessions/:sid/attach', (c) => {
    const sid = c.req.param('sid');
    if (!SESSION_RE.test(sid) || !opts.sessions) {
      throw new ForkboxError('invalid_argument', 'session ids are 8-64 letters, digits, _ or -.');
    }
    const detach = opts.sessions.attach(sid);
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
    admin: true,
    // The API as seen by this request's caller (its session, when it names one).
    api: (c) => {
      const session = sessionOf(c);
      return session !== undefined && opts.sessions ? opts.sessions.scoped(session) : api;
    },
  });
  return app as unknown as Hono;
}
