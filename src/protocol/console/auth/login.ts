/** The login page and the session routes: POST a token to get the session cookie, POST to log out. */
import type { Context, Hono } from 'hono';
import { ForkboxError } from '../../../domain/errors.ts';
import type { Caller } from '../../http/tokens.ts';
import { h, page } from '../markup.ts';
import { clearedCookie, cookieValue, isHttps, MAX_TOKEN_CHARS, sessionCookie } from './cookie.ts';
import type { ConsoleSessions } from './sessions.ts';

export interface LoginDeps {
  authRequired: boolean;
  authenticate(token: string): Promise<Caller | ForkboxError>;
  sessions: ConsoleSessions;
}

/**
 * The caller a request's session cookie stands for: its session is live and its token still
 * authenticates (a token removed from the token file ends every session opened with it). Undefined
 * otherwise.
 */
export async function sessionCaller(
  deps: Pick<LoginDeps, 'authenticate' | 'sessions'>,
  cookieHeader: string | undefined,
): Promise<Caller | undefined> {
  const session = deps.sessions.get(cookieValue(cookieHeader));
  if (!session) return undefined;
  const who = await deps.authenticate(session.token);
  if (who instanceof ForkboxError || who.tenant !== session.tenant) return undefined;
  return who;
}

function loginPage(error?: string): string {
  return page(
    'Log in',
    h`<h2>Log in</h2>${error ? h`<p class="error" id="login-error">${error}</p>` : ''}
<form method="post" action="/console/login"><label>Token
<input type="password" name="token" autocomplete="off" required maxlength="${MAX_TOKEN_CHARS}" autofocus></label>
<button type="submit">Log in</button></form>
<p class="muted">The token of the daemon's token file (or a JWT from its OIDC issuer). It stays in the daemon: this browser keeps only an HttpOnly session cookie for this console.</p>`,
    { loggedIn: false },
  );
}

const secureOf = (c: Context) => isHttps(c.req.url, c.req.header('x-forwarded-proto'));

export function mountLogin(app: Hono, deps: LoginDeps): void {
  app.get('/login', (c) => (deps.authRequired ? c.html(loginPage()) : c.redirect('/console', 303)));
  app.post('/login', async (c) => {
    if (!deps.authRequired) return c.redirect('/console', 303);
    const form = await c.req.parseBody();
    const token = typeof form.token === 'string' ? form.token.trim() : '';
    if (token === '' || token.length > MAX_TOKEN_CHARS) {
      return c.html(loginPage(`Enter a token (at most ${MAX_TOKEN_CHARS} characters).`), 400);
    }
    const who = await deps.authenticate(token);
    if (who instanceof ForkboxError) return c.html(loginPage('That token is not valid here.'), 401);
    c.header('Set-Cookie', sessionCookie(deps.sessions.open(token, who.tenant), secureOf(c)));
    return c.redirect('/console', 303);
  });
  app.post('/logout', (c) => {
    deps.sessions.end(cookieValue(c.req.header('cookie')));
    c.header('Set-Cookie', clearedCookie(secureOf(c)));
    return c.redirect('/console/login', 303);
  });
}
