/**
 * Logs in to the web console as a browser would (POST /console/login with the token and the console's
 * Origin) and returns the Cookie header the session cookie makes: `forkbox_console=<session id>`.
 */
import assert from 'node:assert/strict';

export type Requester = (path: string, init: RequestInit) => Response | Promise<Response>;

export async function consoleCookie(request: Requester, origin: string, token: string): Promise<string> {
  const r = await request('/console/login', {
    method: 'POST',
    headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: `token=${encodeURIComponent(token)}`,
    redirect: 'manual',
  });
  assert.equal(r.status, 303, `console login: ${r.status} ${await r.text()}`);
  const set = r.headers.get('set-cookie') ?? '';
  const m = /^(forkbox_console=[^;]+);/.exec(set);
  assert.ok(m?.[1], `console login set no session cookie: ${set}`);
  return m[1];
}

/** consoleCookie over HTTP to a listener at `base`. */
export const consoleCookieAt = (base: string, token: string) =>
  consoleCookie((path, init) => fetch(`${base}${path}`, init), base, token);
