/**
 * One sandbox's egress proxy: a Unix socket in the sandbox's host inbox (seen inside as
 * /.forkbox/inbox/net.sock), which the sandbox's agent relays its loopback port to. Speaks HTTP CONNECT
 * and plain HTTP forwarding (absolute URIs). Every request is checked against the sandbox's policy — the
 * name against its allow list, each resolved address against addresses.ts — and the proxy connects to
 * the address it checked. Bounded: connections at once, request head bytes, idle time, connect time.
 * Each decision is reported (metrics and the audit log: sandbox, host, port, decision; never contents).
 */
import { chmodSync, rmSync } from 'node:fs';
import { connect, createServer, isIP, type Server, type Socket } from 'node:net';
import { EGRESS } from '../domain/limits.ts';
import { hostAllowed, type NetworkPolicy } from '../domain/network.ts';
import { refusal } from './addresses.ts';
import type { Resolver } from './egress-resolve.ts';

export interface EgressDecision {
  sandbox: string;
  host: string;
  port: number;
  decision: 'accepted' | 'refused';
  reason?: string;
}

export interface EgressProxyOptions {
  sandbox: string;
  socketPath: string;
  policy: NetworkPolicy;
  resolve: Resolver;
  onDecision: (d: EgressDecision) => void;
}

export interface EgressProxy {
  close(): void;
}

interface Target {
  host: string;
  port: number;
}

/** The address to connect to, or why not: the policy check of one request. */
export async function checkTarget(
  policy: NetworkPolicy,
  t: Target,
  resolve: Resolver,
): Promise<{ addr: string } | { refused: string }> {
  if (policy.mode !== 'allow') return { refused: 'network policy is none' };
  if (!Number.isInteger(t.port) || t.port < 1 || t.port > 65535) return { refused: 'bad port' };
  const host = t.host.replace(/^\[|\]$/g, '').toLowerCase();
  if (isIP(host) !== 0) {
    const why = refusal(host, policy.cidrs, true);
    return why ? { refused: why } : { addr: host };
  }
  if (!hostAllowed(policy.hosts, host)) return { refused: 'name not on the allow list' };
  let addrs: string[];
  try {
    addrs = await resolve(host);
  } catch {
    addrs = [];
  }
  if (addrs.length === 0) return { refused: 'name does not resolve' };
  // Every address must pass: a name with one refused address is refused (no picking the good one).
  for (const a of addrs) {
    const why = refusal(a, policy.cidrs, false);
    if (why) return { refused: `${host} resolves to a refused address (${why})` };
  }
  return { addr: addrs[0] as string };
}

/** The target of a request head: CONNECT authority, or an absolute http:// URI. */
function parseHead(head: string): { target: Target; connect: boolean; rewritten?: string } | null {
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

function refuse(sock: Socket, why: string): void {
  const body = `forkbox egress proxy: refused: ${why}\n`;
  sock.end(
    `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

export async function openEgressProxy(o: EgressProxyOptions): Promise<EgressProxy> {
  let open = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer({ pauseOnConnect: false }, (client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    client.setTimeout(EGRESS.idleMs, () => client.destroy());
    if (open >= EGRESS.connections) {
      o.onDecision({
        sandbox: o.sandbox,
        host: '',
        port: 0,
        decision: 'refused',
        reason: 'too many connections',
      });
      refuse(client, `more than ${EGRESS.connections} connections at once`);
      return;
    }
    open += 1;
    client.once('close', () => {
      open -= 1;
    });
    let buf = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) {
        if (buf.length > EGRESS.headBytes) refuse(client, 'request head too large');
        return;
      }
      client.off('data', onData);
      client.pause();
      const req = parseHead(buf.subarray(0, end + 4).toString('latin1'));
      const rest = buf.subarray(end + 4);
      if (!req) {
        refuse(client, 'not an HTTP CONNECT or absolute http:// request');
        return;
      }
      void forward(client, req, rest);
    };
    client.on('data', onData);
  });

  async function forward(
    client: Socket,
    req: NonNullable<ReturnType<typeof parseHead>>,
    rest: Buffer,
  ): Promise<void> {
    const { host, port } = req.target;
    const verdict = await checkTarget(o.policy, req.target, o.resolve);
    const base = { sandbox: o.sandbox, host: host.slice(0, 253), port };
    if ('refused' in verdict) {
      o.onDecision({ ...base, decision: 'refused', reason: verdict.refused });
      refuse(client, verdict.refused);
      return;
    }
    if (client.destroyed) return;
    const up = connect({ host: verdict.addr, port, timeout: EGRESS.connectMs });
    sockets.add(up);
    up.on('close', () => sockets.delete(up));
    up.once('timeout', () => up.destroy(new Error('connect timed out')));
    up.once('error', (e) => {
      if (!client.destroyed && up.connecting) {
        o.onDecision({ ...base, decision: 'refused', reason: `connect failed: ${e.message}` });
        refuse(client, 'could not connect');
      } else client.destroy();
    });
    up.once('connect', () => {
      o.onDecision({ ...base, decision: 'accepted' });
      up.setTimeout(EGRESS.idleMs, () => up.destroy());
      if (req.connect) client.write('HTTP/1.1 200 Connection established\r\n\r\n');
      else up.write(req.rewritten ?? '');
      if (rest.length > 0) up.write(rest);
      client.pipe(up);
      up.pipe(client);
      client.resume();
      client.on('close', () => up.destroy());
      up.on('close', () => client.end());
    });
  }

  rmSync(o.socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.socketPath, () => resolve());
  });
  // The sandbox's root (a mapped uid) connects through the bind mount.
  chmodSync(o.socketPath, 0o666);
  return {
    close() {
      server.close();
      for (const s of sockets) s.destroy();
      rmSync(o.socketPath, { force: true });
    },
  };
}
