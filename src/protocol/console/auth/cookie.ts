/**
 * The console's session cookie: an opaque session id (sessions.ts keeps what it stands for; never the
 * caller's token), HttpOnly (no script reads it), SameSite=Strict (no other site's page or link sends
 * it), Path=/console (the REST and MCP endpoints never see it), and Secure when the page was served over
 * HTTPS. Published ports listen on another loopback address than the listener (PORTS.publishHost), so a
 * page a sandbox serves is never of the console's site and its requests never carry the cookie.
 */

export const COOKIE_NAME = 'forkbox_console';
export const COOKIE_PATH = '/console';
/** Tokens longer than this are refused at login (a browser keeps about 4 KiB per cookie). */
export const MAX_TOKEN_CHARS = 3072;
/** A console session lasts at most this long; log in again after. */
export const SESSION_SECONDS = 12 * 3600;

/** The value of cookie `name` in a Cookie header, or undefined. */
export function cookieValue(header: string | undefined, name = COOKIE_NAME): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i < 0 || part.slice(0, i).trim() !== name) continue;
    const value = part.slice(i + 1).trim();
    try {
      return value === '' ? undefined : decodeURIComponent(value);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function attributes(secure: boolean, maxAge: number): string {
  return `Path=${COOKIE_PATH}; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure ? '; Secure' : ''}`;
}

/** Set-Cookie for the new session `id`. */
export function sessionCookie(id: string, secure: boolean): string {
  return `${COOKIE_NAME}=${encodeURIComponent(id)}; ${attributes(secure, SESSION_SECONDS)}`;
}

/** Set-Cookie that ends the session (logout). */
export function clearedCookie(secure: boolean): string {
  return `${COOKIE_NAME}=; ${attributes(secure, 0)}`;
}

/** True when the request reached us over HTTPS (directly, or through a proxy that says so). */
export function isHttps(url: string, forwardedProto: string | undefined): boolean {
  return url.startsWith('https:') || forwardedProto?.split(',')[0]?.trim().toLowerCase() === 'https';
}
