/**
 * OpenID Connect discovery for the TCP listener's JWT bearer tokens: the issuer's
 * `/.well-known/openid-configuration`, fetched with a deadline and a size bound, whose `issuer` must be
 * exactly the configured one (else a document could speak for another issuer) and whose `jwks_uri`
 * obeys the same URL rule as the issuer: https, or plain http only to a loopback address (a test or a
 * provider on this machine; anything else could be read or changed on the way).
 */
import { ForkboxError } from '../../domain/errors.ts';
import { OIDC } from '../../domain/limits.ts';
import { isLoopbackHost } from './guards.ts';

/** A URL the verifier may fetch from: https, or http to 127.0.0.0/8, ::1 or localhost. */
export function checkOidcUrl(text: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ForkboxError(
      'invalid_argument',
      `${what} '${text}' is not a URL. Give e.g. https://id.example.`,
    );
  }
  const loopbackHttp = url.protocol === 'http:' && isLoopbackHost(url.hostname);
  if (url.protocol !== 'https:' && !loopbackHttp) {
    throw new ForkboxError(
      'invalid_argument',
      `${what} '${text}' must use https (plain http is accepted only for a loopback address).`,
    );
  }
  if (url.username !== '' || url.password !== '' || url.hash !== '' || url.search !== '') {
    throw new ForkboxError(
      'invalid_argument',
      `${what} '${text}' must not carry credentials, a query or a fragment.`,
    );
  }
  return url;
}

/** Read a response body up to `maxBytes`, failing as soon as it is longer. */
async function readBounded(res: Response, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(res.headers.get('content-length') ?? '0');
  if (declared > maxBytes) {
    await res.body?.cancel();
    throw new Error(`the response is larger than ${maxBytes} bytes`);
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = res.body?.getReader();
  if (!reader) return new Uint8Array();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new Error(`the response is larger than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/**
 * A fetch whose body is read within `maxBytes` and handed back whole (jose's remote JWKS reads the body
 * it gets without a bound). Redirects are not followed; the caller's signal bounds the time.
 */
export function boundedFetch(maxBytes: number) {
  return async (url: string, init: RequestInit): Promise<Response> => {
    const res = await fetch(url, { ...init, redirect: 'manual' });
    const body = await readBounded(res, maxBytes);
    return new Response(body, { status: res.status, headers: res.headers });
  };
}

/** GET a JSON document within the OIDC bounds (time and bytes). Errors say what went wrong. */
export async function fetchJsonBounded(url: URL): Promise<unknown> {
  const signal = AbortSignal.timeout(OIDC.fetchMs);
  let res: Response;
  try {
    res = await boundedFetch(OIDC.documentBytes)(url.href, {
      signal,
      headers: { accept: 'application/json' },
    });
  } catch (e) {
    throw signal.aborted ? new Error(`no complete answer within ${OIDC.fetchMs} ms`) : e;
  }
  if (res.status !== 200) throw new Error(`HTTP ${res.status} (redirects are not followed)`);
  return JSON.parse(await res.text()) as unknown;
}

export interface Discovered {
  jwksUri: URL;
}

/** Discovery of `issuer` (already checked by checkOidcUrl). Throws `unavailable` saying why. */
export async function discover(issuer: string): Promise<Discovered> {
  const where = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  const fail = (why: string) =>
    new ForkboxError(
      'unavailable',
      `OIDC discovery at ${where} failed: ${why}. Check --oidc-issuer and that the issuer is reachable.`,
    );
  let doc: unknown;
  try {
    doc = await fetchJsonBounded(new URL(where));
  } catch (e) {
    throw fail((e as Error).message);
  }
  const d = (doc ?? {}) as { issuer?: unknown; jwks_uri?: unknown };
  if (d.issuer !== issuer) {
    throw fail(`the document names the issuer '${String(d.issuer).slice(0, 200)}', not '${issuer}'`);
  }
  if (typeof d.jwks_uri !== 'string') throw fail('the document has no jwks_uri');
  try {
    return { jwksUri: checkOidcUrl(d.jwks_uri, 'the jwks_uri') };
  } catch (e) {
    throw fail((e as Error).message);
  }
}
