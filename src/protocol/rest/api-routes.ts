/**
 * The /v1 handlers, one per ForkboxApi method, mounted on any Hono app from the route table in
 * route-defs.ts. The local socket (local-app.ts) and the TCP listener (protocol/http/app.ts) both mount
 * them; each passes `api(c)`, the API as seen by the request's caller (its session, or its tenant).
 */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { Handler, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { ForkboxError } from '../../domain/errors.ts';
import { adminHandlers } from './admin-handlers.ts';
import { execHandlers } from './exec-handlers.ts';
import { fileHandlers } from './file-handlers.ts';
import type { ApiFor } from './handler-support.ts';
import { EXEC_BODY_LIMIT, JSON_BODY_LIMIT, RAW_BODY_LIMIT } from './local-schemas.ts';
import { honoPath, ROUTES, type RouteName } from './route-defs.ts';
import { sandboxHandlers } from './sandbox-handlers.ts';

function tooLarge(limit: number): ForkboxError {
  return new ForkboxError(
    'too_large',
    `request body is larger than ${limit} bytes. Send less per request (split files into parts, or write stdin in chunks).`,
    { limitBytes: limit },
  );
}

/** Bound every body: large raw bodies only where raw bytes are expected, 1 MiB JSON elsewhere. */
export function bodyLimitFor(method: string, path: string): number {
  if (method === 'PUT' && path.endsWith('/files/content')) return RAW_BODY_LIMIT;
  if (method === 'POST' && /\/execs\/[^/]+\/stdin$/.test(path)) return RAW_BODY_LIMIT;
  if (method === 'POST' && path.endsWith('/exec')) return EXEC_BODY_LIMIT;
  return JSON_BODY_LIMIT;
}

/** Middleware: refuse bodies over `limit(method, path)` with a `too_large` error (413) before reading them. */
export function bodyLimits(
  limit: (method: string, path: string) => number = bodyLimitFor,
): MiddlewareHandler {
  return async (c, next) => {
    const max = limit(c.req.method, c.req.path);
    return bodyLimit({ maxSize: max, onError: () => Promise.reject(tooLarge(max)) })(c, next);
  };
}

export { stripUndefined } from './handler-support.ts';

function handlers(A: ApiFor): Record<RouteName, Handler> {
  // Typed per area, so a route without a handler (or a handler without a route) fails to compile.
  return { ...sandboxHandlers(A), ...execHandlers(A), ...fileHandlers(A), ...adminHandlers(A) };
}

export interface MountApiOptions {
  /** The API as seen by this request's caller. */
  api: ApiFor;
  /**
   * Serve host-level operations (image build/import/remove, template define/delete, gc, df). Only the
   * local socket does: image import reads any host path as the daemon (root), and gc/df/image removal and
   * template configs act across tenants (each template config may start a template container). Without
   * this flag those routes answer `permission_denied` and are left out of the OpenAPI document.
   */
  admin: boolean;
}

/** Mount every /v1 route on `app` and register it in the app's OpenAPI registry. */
export function mountApiRoutes(app: OpenAPIHono, opts: MountApiOptions): void {
  const h = handlers(opts.api);
  for (const [name, route] of Object.entries(ROUTES) as [RouteName, (typeof ROUTES)[RouteName]][]) {
    const served = opts.admin || !route.adminOnly;
    const { adminOnly: _, ...config } = route;
    if (served) app.openAPIRegistry.registerPath(config);
    const handler: Handler = served
      ? h[name]
      : () => {
          throw new ForkboxError(
            'permission_denied',
            `${route.method.toUpperCase()} ${route.path} is a host administration route, served only on the daemon's local socket. Run the matching 'forkbox' command on the host.`,
          );
        };
    app.on(route.method.toUpperCase(), honoPath(route.path), handler);
  }
}
