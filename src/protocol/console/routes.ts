/**
 * The web console under /console on the TCP listener: server-rendered pages, one script and one style
 * sheet. Authentication is the session cookie only (cookie.ts), checked on every request by the
 * listener's auth step, which hands this app the caller; the REST and MCP endpoints never accept the
 * cookie. Every POST must carry an Origin header (the listener's guard has already checked it is ours),
 * beside the SameSite=Strict cookie: a page on another site can neither read nor drive the console.
 */
import { type Context, Hono } from 'hono';
import { ForkboxError, toForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi } from '../../service/api.ts';
import type { Caller } from '../http/tokens.ts';
import { toHttpError } from '../rest/errors.ts';
import { CONSOLE_CSS, CONSOLE_JS, SECURITY_HEADERS } from './assets.ts';
import { cookieValue } from './cookie.ts';
import { dashboardBody } from './dashboard.ts';
import { loadDashboard } from './data.ts';
import type { ConsoleStreams } from './events.ts';
import { type LoginDeps, mountLogin } from './login.ts';
import { h, page } from './markup.ts';
import { mountSandboxRoutes } from './sandbox-routes.ts';

export interface ConsoleDeps extends LoginDeps {
  /** The caller the session cookie stands for, or undefined when not logged in. */
  caller(): Caller | undefined;
  api(caller: Caller): ForkboxApi;
  streams: ConsoleStreams;
}

/** Body bound of console POSTs (forms of a few fields). */
export const CONSOLE_BODY_LIMIT = 16 * 1024;

export const isConsolePath = (path: string) => path === '/console' || path.startsWith('/console/');

/** An error as a console page with the API's status. */
export function errorPage(c: Context, e: unknown, loggedIn = true): Response {
  const err = toForkboxError(e);
  const { status } = toHttpError(err);
  return c.html(
    page('Error', h`<h2>Error</h2><p class="error" id="error">${err.message}</p>`, { loggedIn }),
    status,
  );
}

export function createConsoleApp(deps: ConsoleDeps): Hono {
  const app = new Hono();
  app.onError((e, c) => errorPage(c, e, deps.caller() !== undefined));
  app.use('*', async (c, next) => {
    if (c.req.method === 'POST' && c.req.header('origin') === undefined) {
      const why = 'console forms must come from the console page (no Origin header).';
      c.res = errorPage(c, new ForkboxError('permission_denied', why), false);
    } else await next();
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) c.res.headers.set(k, v);
  });
  app.get('/assets/console.js', (c) =>
    c.body(CONSOLE_JS, 200, { 'Content-Type': 'text/javascript; charset=utf-8' }),
  );
  app.get('/assets/console.css', (c) =>
    c.body(CONSOLE_CSS, 200, { 'Content-Type': 'text/css; charset=utf-8' }),
  );
  mountLogin(app, deps);
  app.use('*', async (c, next) => {
    if (deps.caller()) return next();
    if (c.req.method === 'GET' && c.req.path !== '/console/events') return c.redirect('/console/login', 303);
    return errorPage(c, new ForkboxError('unauthenticated', 'log in to the console first.'), false);
  });
  const callerApi = () => {
    const caller = deps.caller() as Caller;
    return { caller, api: deps.api(caller) };
  };
  app.get('/', async (c) => {
    const data = await loadDashboard(callerApi().api);
    return c.html(
      page('Sandboxes', dashboardBody(data, Date.now()), { loggedIn: deps.authRequired, live: true }),
    );
  });
  app.get('/events', (c) => {
    const { caller, api } = callerApi();
    const token = cookieValue(c.req.header('cookie'));
    return deps.streams.open(c, {
      tenant: caller.tenant,
      load: () => loadDashboard(api),
      stillValid: async () =>
        !deps.authRequired ||
        (token !== undefined && !((await deps.authenticate(token)) instanceof ForkboxError)),
    });
  });
  mountSandboxRoutes(app, { api: () => callerApi().api, loggedIn: deps.authRequired });
  return app;
}
