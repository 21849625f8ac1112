/**
 * One sandbox's egress proxy: a Unix socket in the sandbox's host inbox (seen inside as
 * /.forkbox/inbox/net.sock), which the sandbox's agent relays its loopback port to. Speaks HTTP CONNECT
 * and plain HTTP forwarding (absolute URIs, egress-http.ts) and SOCKS5 CONNECT (egress-socks.ts), told
 * apart by the first byte (0x05: SOCKS5; a letter: an HTTP method; anything else is closed). Every
 * request is checked against the sandbox's policy — the name against its allow list, each resolved
 * address against addresses.ts — and the proxy connects to the address it checked. Bounded: connections
 * at once, handshake bytes and time, idle time, connect time.
 * Each decision is reported (metrics and the audit log: sandbox, host, port, decision; never contents).
 */
import { chmodSync, rmSync } from 'node:fs';
import { connect, createServer, isIP, type Server, type Socket } from 'node:net';
import { EGRESS } from '../domain/limits.ts';
import { hostAllowed, type NetworkPolicy } from '../domain/network.ts';
import { refusal } from './addresses.ts';
import { parseHead, refuseHttp, type Target } from './egress-http.ts';
import type { Resolver } from './egress-resolve.ts';
import { SOCKS_REP, socksConnectFailure } from './egress-socks.ts';
import { socksHandshake } from './egress-socks-session.ts';

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

/** A finished handshake: the target, how to answer, bytes read past it, or a refusal already decided. */
export type Handshaken = (target: Target, answer: Answer, rest: Buffer, refused?: [string, number]) => void;

export interface EgressProxy {
  close(): void;
}

/** Why checkTarget refuses a listed name that has no address (SOCKS5 says "host unreachable"). */
export const NO_ADDRESS = 'name does not resolve';

/** How one connection answers, in its own dialect (HTTP or SOCKS5). */
export interface Answer {
  /** Refused by the policy or unreachable: `rep` is the SOCKS5 reply code. */
  refuse(why: string, rep: number): void;
  /** Connected to `up`: say so, and send what was read past the handshake. */
  connected(up: Socket): void;
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
  if (addrs.length === 0) return { refused: NO_ADDRESS };
  // Every address must pass: a name with one refused address is refused (no picking the good one).
  for (const a of addrs) {
    const why = refusal(a, policy.cidrs, false);
    if (why) return { refused: `${host} resolves to a refused address (${why})` };
  }
  return { addr: addrs[0] as string };
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
      refuseHttp(client, `more than ${EGRESS.connections} connections at once`);
      return;
    }
    open += 1;
    // The handshake (HTTP head or SOCKS5 greeting and request) must be complete within handshakeMs.
    const handshake = setTimeout(() => client.destroy(), EGRESS.handshakeMs);
    client.once('close', () => {
      open -= 1;
      clearTimeout(handshake);
    });
    const done = (target: Target, answer: Answer, rest: Buffer, refused?: [string, number]) => {
      clearTimeout(handshake);
      client.pause();
      void forward(client, target, answer, rest, refused);
    };
    client.once('data', (first: Buffer) => {
      if (first[0] === 0x05) socksHandshake(client, first, done);
      else if (first[0] !== undefined && first[0] >= 0x41 && first[0] <= 0x5a) httpHead(client, first, done);
      else client.destroy();
    });
  });

  function httpHead(client: Socket, first: Buffer, done: Handshaken): void {
    let buf = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) {
        if (buf.length > EGRESS.headBytes) {
          client.off('data', onData);
          refuseHttp(client, 'request head too large');
        }
        return;
      }
      client.off('data', onData);
      const req = parseHead(buf.subarray(0, end + 4).toString('latin1'));
      if (!req) {
        refuseHttp(client, 'not an HTTP CONNECT or absolute http:// request');
        return;
      }
      const answer: Answer = {
        refuse: (why) => refuseHttp(client, why),
        connected: (up) => {
          if (req.connect) client.write('HTTP/1.1 200 Connection established\r\n\r\n');
          else up.write(req.rewritten ?? '');
        },
      };
      done(req.target, answer, buf.subarray(end + 4));
    };
    client.on('data', onData);
    onData(first);
  }

  async function forward(
    client: Socket,
    target: Target,
    answer: Answer,
    rest: Buffer,
    refused?: [string, number],
  ): Promise<void> {
    const { host, port } = target;
    const base = { sandbox: o.sandbox, host: host.slice(0, 253), port };
    const verdict = refused ? { refused: refused[0] } : await checkTarget(o.policy, target, o.resolve);
    if ('refused' in verdict) {
      o.onDecision({ ...base, decision: 'refused', reason: verdict.refused });
      const rep =
        refused?.[1] ?? (verdict.refused === NO_ADDRESS ? SOCKS_REP.hostUnreachable : SOCKS_REP.notAllowed);
      answer.refuse(verdict.refused, rep);
      return;
    }
    if (client.destroyed) return;
    const up = connect({ host: verdict.addr, port, timeout: EGRESS.connectMs });
    sockets.add(up);
    up.on('close', () => sockets.delete(up));
    up.once('timeout', () => up.destroy(new Error('connect timed out')));
    let connected = false;
    up.once('error', (e: NodeJS.ErrnoException) => {
      // (Node clears up.connecting before it emits a failed connect's error: the flag is ours.)
      if (!client.destroyed && !connected) {
        o.onDecision({ ...base, decision: 'refused', reason: `connect failed: ${e.message}` });
        answer.refuse('could not connect', socksConnectFailure(e.code));
      } else client.destroy();
    });
    up.once('connect', () => {
      connected = true;
      o.onDecision({ ...base, decision: 'accepted' });
      up.setTimeout(EGRESS.idleMs, () => up.destroy());
      answer.connected(up);
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
