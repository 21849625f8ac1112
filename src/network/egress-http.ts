/**
 * The HTTP side of the egress proxy: one request head (CONNECT authority, or an absolute http:// URI
 * rewritten to origin form with proxy and hop-by-hop headers dropped and `Connection: close`), and the
 * 403 refusal. The proxy checks the target exactly as it checks a SOCKS5 request.
 */
import type { Socket } from 'node:net';

export interface Target {
  host: string;
  port: number;
}

export interface HttpRequest {
  target: Target;
  connect: boolean;
  rewritten?: string;
}

/** The target of a request head: CONNECT authority, or an absolute http:// URI. */
export function parseHead(head: string): HttpRequest | null {
  const lineEnd = head.indexOf('\r\n');
  const [method = '', uri = '', version = ''] = head.slice(0, lineEnd).split(' ');
  if (!/^HTTP\/1\.[01]$/.test(version)) return null;
  if (method === 'CONNECT') {
    const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+):(\d{1,5})$/.exec(uri);
    return m?.[1] && m[2] ? { target: { host: m[1], port: Number(m[2]) }, connect: true } : null;
  }
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' || url.username !== '' || url.password !== '') return null;
  // Origin-form request line; hop-by-hop and proxy headers dropped; one request per connection.
  const headers = head
    .slice(lineEnd + 2)
    .split('\r\n')
    .filter((l) => l !== '' && !/^(proxy-[a-z-]*|connection|keep-alive)\s*:/i.test(l));
  const rewritten = `${method} ${url.pathname}${url.search} ${version}\r\n${headers.join('\r\n')}\r\nConnection: close\r\n\r\n`;
  return {
    target: { host: url.hostname, port: url.port === '' ? 80 : Number(url.port) },
    connect: false,
    rewritten,
  };
}

export function refuseHttp(sock: Socket, why: string): void {
  const body = `forkbox egress proxy: refused: ${why}\n`;
  sock.end(
    `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
