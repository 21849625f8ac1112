/**
 * `/v1/sandboxes/{id}/ports/{port}/…` on the TCP listener: plain HTTP to a sandbox's published port,
 * for remote users who cannot reach the host's 127.0.0.2. It is behind the listener's bearer token and
 * tenant scope (another tenant's sandbox is not found) like every /v1 route; the request goes to the
 * sandbox's server over a connection the runtime relays (service: connectPort), with the prefix taken
 * off the path, the caller's Authorization and hop-by-hop headers dropped and `Connection: close`.
 * No upgrades (WebSocket): only request/response.
 *
 * The sandbox's pages come back on the listener's own origin, where the console lives, so they are
 * fenced in: the request carries no cookie, a `Set-Cookie` of the sandbox's is dropped, and every
 * response is served under `Content-Security-Policy: sandbox` (an opaque origin: a script on the page can
 * neither read the console's pages nor send its session cookie, whatever path it asks for).
 */
import http from 'node:http';
import type net from 'node:net';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { ForkboxError } from '../../domain/errors.ts';
import { PORTS } from '../../domain/limits.ts';
import type { ForkboxApi } from '../../service/api.ts';

export const PORT_PROXY_RE = /^\/v1\/sandboxes\/([^/]+)\/ports\/(\d{1,5})(\/.*)?$/;

const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'authorization',
]);
/** Never passed on: the listener's cookies to the sandbox, the sandbox's cookies to the listener's origin. */
const COOKIES = new Set(['cookie', 'set-cookie', 'set-cookie2']);
export const PROXIED_CSP = 'sandbox allow-scripts allow-forms allow-popups allow-downloads';

export async function proxyToPort(req: Request, api: ForkboxApi): Promise<Response> {
  const url = new URL(req.url);
  const m = PORT_PROXY_RE.exec(url.pathname);
  if (!m)
    throw new ForkboxError('not_found', 'no such published-port path: use /v1/sandboxes/ID/ports/PORT/…');
  const id = decodeURIComponent(m[1] as string);
  const port = Number(m[2]);
  const path = `${m[3] ?? '/'}${url.search}`;
  const sock = (await api.connectPort(id, port)) as net.Socket;
  const headers: Record<string, string> = {};
  req.headers.forEach((v, k) => {
    if (!HOP.has(k) && !COOKIES.has(k)) headers[k] = v;
  });
  headers.host = `127.0.0.1:${port}`;
  headers.connection = 'close';
  return await new Promise<Response>((resolve, reject) => {
    const out = http.request({ method: req.method, path, headers, createConnection: () => sock }, (res) => {
      const h = new Headers();
      for (const [k, v] of Object.entries(res.headers)) {
        if (v === undefined || HOP.has(k) || COOKIES.has(k)) continue;
        for (const one of Array.isArray(v) ? v : [v]) h.append(k, one);
      }
      h.append('content-security-policy', PROXIED_CSP); // both policies hold: ours only narrows
      const status = res.statusCode ?? 502;
      const empty = req.method === 'HEAD' || status === 204 || status === 304;
      try {
        resolve(
          new Response(empty ? null : (Readable.toWeb(res) as unknown as ReadableStream), {
            status,
            headers: h,
          }),
        );
      } catch {
        res.destroy();
        reject(new ForkboxError('agent_protocol', `the sandbox's server answered with status ${status}.`));
      }
    });
    out.setTimeout(PORTS.idleMs, () => out.destroy(new Error('no answer in time')));
    out.on('error', (e) => {
      sock.destroy();
      reject(
        new ForkboxError(
          'unavailable',
          `the server on port ${port} of sandbox '${id}' did not answer (${e.message}): check that it is running.`,
        ),
      );
    });
    if (req.body && req.method !== 'GET' && req.method !== 'HEAD')
      Readable.fromWeb(req.body as unknown as NodeReadableStream).pipe(out);
    else out.end();
  });
}
