/** The login page and the session routes: POST a token to get the session cookie, POST to log out. */
import type { Context, Hono } from 'hono';
import { ForkboxError } from '../../domain/errors.ts';
import type { Caller } from '../http/tokens.ts';
import { clearedCookie, isHttps, MAX_TOKEN_CHARS, sessionCookie } from './cookie.ts';
import { h, page } from './markup.ts';

export interface LoginDeps {
  authRequired: boolean;
  authenticate(token: string): Promise<Caller | ForkboxError>;
}

function loginPage(error?: string): string {
  return page(
    'Log in',
    h`<h2>Log in</h2>${error ? h`<p class="error" id="login-error">${error}</p>` : ''}
<form method="post" action="/console/login"><label>Token
<input type="password" name="token" autocomplete="off" required maxlength="${MAX_TOKEN_CHARS}" autofocus></label>
<button type="submit">Log in</button></form>
<p class="muted">The token of the daemon's token file (or a JWT from its OIDC issuer). It is kept in an HttpOnly cookie for this console only.</p>`,
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
    c.header('Set-Cookie', sessionCookie(token, secureOf(c)));
    return c.redirect('/console', 303);
  });
  app.post('/logout', (c) => {
    c.header('Set-Cookie', clearedCookie(secureOf(c)));
    return c.redirect('/console/login', 303);
  });
}
