/**
 * The web console under /console on the TCP listener: server-rendered pages, one script and one style
 * sheet. Authentication is the session cookie only (cookie.ts, sessions.ts), checked on every request by the
 * listener's auth step, which hands this app the caller; the REST and MCP endpoints never accept the
 * cookie. Every POST must carry an Origin header (the listener's guard has already checked it is ours),
 * beside the SameSite=Strict cookie: a page on another site can neither read nor drive the console.
 */
import { type Context, Hono } from 'hono';
import { ForkboxError, toForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi } from '../../service/api.ts';
import type { AuditLog } from '../audit.ts';
import type { Caller } from '../http/tokens.ts';
import { toHttpError } from '../rest/errors.ts';
import { CONSOLE_CSS, CONSOLE_JS, SECURITY_HEADERS } from './assets.ts';
import { type LoginDeps, mountLogin, sessionCaller } from './auth/login.ts';
import { loadDashboard } from './data.ts';
import type { ConsoleStreams } from './events.ts';
import { h, page } from './markup.ts';
import { mountAuditRoute } from './pages/audit-page.ts';
import { dashboardBody } from './pages/dashboard.ts';
import { EXEC_JS } from './pages/exec-page.ts';
import { UPLOAD_BYTES } from './pages/files-page.ts';
import { loadTerminalAssets, TERMINAL_JS } from './pages/terminal-page.ts';
import { mountSandboxRoutes } from './sandbox-routes.ts';
import { mountTerminalRoutes } from './terminal-routes.ts';

export interface ConsoleDeps extends LoginDeps {
  /** The daemon's audit log, read back for the audit page (absent: the page lists nothing). */
  audit?: AuditLog | undefined;
  /** The caller the session cookie stands for, or undefined when not logged in. */
  caller(): Caller | undefined;
  api(caller: Caller): ForkboxApi;
  streams: ConsoleStreams;
}

/** Body bound of console POSTs (forms of a few fields, the REPL's code). */
export const CONSOLE_BODY_LIMIT = 128 * 1024;

/** The body bound of a console path: an upload's is the file's bound plus the form's own bytes. */
export function consoleBodyLimit(path: string): number {
  return /^\/console\/sandboxes\/[^/]+\/upload$/.test(path) ? UPLOAD_BYTES + 64 * 1024 : CONSOLE_BODY_LIMIT;
}

export const isConsolePath = (path: string) => path === '/console' || path.startsWith('/console/');

/** The console's long-lived streams (server-sent events), bounded per tenant by their own cap (events.ts). */
export const isConsoleStream = (path: string) =>
  path === '/console/events' ||
  /^\/console\/sandboxes\/[^/]+\/(terminal\/[^/]+\/events|execs\/[^/]+\/output)$/.test(path);

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
    // A page that set its own policy keeps it (the terminal's: terminal-page.ts says why).
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) if (!c.res.headers.has(k)) c.res.headers.set(k, v);
  });
  const term = loadTerminalAssets();
  const JS = { 'Content-Type': 'text/javascript; charset=utf-8' };
  const CSS = { 'Content-Type': 'text/css; charset=utf-8' };
  app.get('/assets/console.js', (c) => c.body(CONSOLE_JS, 200, JS));
  app.get('/assets/console.css', (c) => c.body(CONSOLE_CSS, 200, CSS));
  app.get('/assets/terminal.js', (c) => c.body(TERMINAL_JS, 200, JS));
  app.get('/assets/exec.js', (c) => c.body(EXEC_JS, 200, JS));
  app.get('/assets/xterm.js', (c) => c.body(term.xtermJs, 200, JS));
  app.get('/assets/addon-fit.js', (c) => c.body(term.fitJs, 200, JS));
  app.get('/assets/xterm.css', (c) => c.body(term.xtermCss, 200, CSS));
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
  /** Whether the session cookie of a long-lived stream's request still logs in (a token may be revoked). */
  const stillValid = async (c: Context) =>
    !deps.authRequired || (await sessionCaller(deps, c.req.header('cookie'))) !== undefined;
  app.get('/events', (c) => {
    const { caller, api } = callerApi();
    return deps.streams.open(c, {
      tenant: caller.tenant,
      load: () => loadDashboard(api),
      stillValid: () => stillValid(c),
    });
  });
  const reserveStream = () => deps.streams.reserve(callerApi().caller.tenant);
  mountSandboxRoutes(app, {
    api: () => callerApi().api,
    loggedIn: deps.authRequired,
    stillValid,
    reserveStream,
  });
  mountAuditRoute(app, {
    audit: deps.audit,
    caller: () => callerApi().caller,
    loggedIn: deps.authRequired,
  });
  mountTerminalRoutes(app, {
    api: () => callerApi().api,
    tenant: () => callerApi().caller.tenant,
    loggedIn: deps.authRequired,
    stillValid,
    reserveStream,
  });
  return app;
}
