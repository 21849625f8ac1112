/**
 * One SOCKS5 handshake on an egress proxy connection: the greeting (answered with no-authentication, or
 * "no acceptable method" and closed), then the request, fed from the connection's bytes as they come
 * (a client may send both at once). Malformed bytes close the connection; an unsupported command or
 * address type is answered with its reply code and reported as a refusal. The proxy's `done` then checks
 * the target like any other.
 */
import type { Socket } from 'node:net';
import type { Answer, Handshaken } from './egress-proxy.ts';
import {
  readGreeting,
  readRequest,
  SOCKS_NO_AUTH,
  SOCKS_NO_METHOD,
  SOCKS_REP,
  socksReply,
} from './egress-socks.ts';

export function socksHandshake(client: Socket, first: Buffer, done: Handshaken): void {
  let buf = Buffer.alloc(0);
  let greeted = false;
  const answer: Answer = {
    refuse: (_why, rep) => client.end(socksReply(rep)),
    connected: () => client.write(socksReply(SOCKS_REP.succeeded)),
  };
  const onData = (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    if (!greeted) {
      const g = readGreeting(buf);
      if (g === 'more') return;
      if ('malformed' in g || !g.noAuth) {
        client.off('data', onData);
        client.end(SOCKS_NO_METHOD);
        return;
      }
      client.write(SOCKS_NO_AUTH);
      greeted = true;
      buf = buf.subarray(g.used);
    }
    const r = readRequest(buf);
    if (r === 'more') return;
    client.off('data', onData);
    if ('malformed' in r) {
      client.end(socksReply(SOCKS_REP.generalFailure));
    } else if ('unsupported' in r) {
      // Reported like any refusal when the request named a target; an unknown address type names none.
      if (r.unsupported === SOCKS_REP.commandNotSupported && r.target) {
        done(r.target, answer, Buffer.alloc(0), [r.why, r.unsupported]);
      } else client.end(socksReply(r.unsupported));
    } else {
      done(r.target, answer, buf.subarray(r.used));
    }
  };
  client.on('data', onData);
  onData(first);
}
