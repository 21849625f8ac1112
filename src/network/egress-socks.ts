/**
 * The SOCKS5 side of the egress proxy (RFC 1928): the greeting (only method 0x00, no authentication, is
 * offered back) and the request (only CONNECT; address types domain, IPv4, IPv6), parsed from bytes the
 * proxy has buffered. Pure functions: the proxy feeds them, writes their replies, and checks the target
 * exactly as it checks an HTTP CONNECT. Each part has a length bounded by its own fields (a greeting at
 * most 257 bytes, a request at most 262), so nothing here buffers without limit.
 */
import { isIPv4, isIPv6 } from 'node:net';

export const SOCKS_VERSION = 0x05;

/** Reply codes (RFC 1928 §6). */
export const SOCKS_REP = {
  succeeded: 0x00,
  generalFailure: 0x01,
  notAllowed: 0x02,
  networkUnreachable: 0x03,
  hostUnreachable: 0x04,
  connectionRefused: 0x05,
  commandNotSupported: 0x07,
  addressTypeNotSupported: 0x08,
} as const;

/** The method-selection answers: no authentication, or no acceptable method. */
export const SOCKS_NO_AUTH = Buffer.from([SOCKS_VERSION, 0x00]);
export const SOCKS_NO_METHOD = Buffer.from([SOCKS_VERSION, 0xff]);

/** A reply to a request; the bound address is never disclosed (0.0.0.0:0). */
export function socksReply(rep: number): Buffer {
  return Buffer.from([SOCKS_VERSION, rep, 0x00, 0x01, 0, 0, 0, 0, 0, 0]);
}

export type Greeting = 'more' | { noAuth: boolean; used: number } | { malformed: string };

/** VER NMETHODS METHODS…: whether no-authentication is offered. */
export function readGreeting(buf: Buffer): Greeting {
  if (buf.length < 2) return 'more';
  const n = buf[1] as number;
  if (buf[0] !== SOCKS_VERSION || n === 0) return { malformed: 'bad SOCKS5 greeting' };
  if (buf.length < 2 + n) return 'more';
  return { noAuth: buf.subarray(2, 2 + n).includes(0x00), used: 2 + n };
}

export type SocksRequest =
  | 'more'
  | { target: { host: string; port: number }; used: number }
  | { malformed: string }
  | { unsupported: number; why: string; target?: { host: string; port: number } };

/** VER CMD RSV ATYP DST.ADDR DST.PORT. */
export function readRequest(buf: Buffer): SocksRequest {
  if (buf.length < 5) return 'more';
  const [ver, cmd, rsv, atyp] = buf;
  if (ver !== SOCKS_VERSION || rsv !== 0x00) return { malformed: 'bad SOCKS5 request' };
  let host: string;
  let at: number;
  if (atyp === 0x01) {
    if (buf.length < 10) return 'more';
    host = [...buf.subarray(4, 8)].join('.');
    at = 8;
  } else if (atyp === 0x04) {
    if (buf.length < 22) return 'more';
    const words: string[] = [];
    for (let i = 4; i < 20; i += 2) words.push(buf.readUInt16BE(i).toString(16));
    host = words.join(':');
    at = 20;
  } else if (atyp === 0x03) {
    const len = buf[4] as number;
    if (len === 0) return { malformed: 'empty SOCKS5 domain name' };
    if (buf.length < 5 + len + 2) return 'more';
    host = buf.subarray(5, 5 + len).toString('latin1');
    // Printable ASCII only: a name with control bytes is no name (and never reaches the audit log).
    if (!/^[\x21-\x7e]+$/.test(host)) return { malformed: 'SOCKS5 domain name is not printable' };
    at = 5 + len;
  } else {
    return { unsupported: SOCKS_REP.addressTypeNotSupported, why: 'address type not supported' };
  }
  if (atyp !== 0x03 && !isIPv4(host) && !isIPv6(host)) return { malformed: 'bad SOCKS5 address' };
  const port = buf.readUInt16BE(at);
  const used = at + 2;
  if (buf.length < used) return 'more';
  if (cmd !== 0x01) {
    const why = 'only the SOCKS5 CONNECT command';
    return { unsupported: SOCKS_REP.commandNotSupported, why, target: { host, port } };
  }
  return { target: { host, port }, used };
}

/** The reply code for a failed connect to a checked address. */
export function socksConnectFailure(code: string | undefined): number {
  if (code === 'ECONNREFUSED') return SOCKS_REP.connectionRefused;
  if (code === 'ENETUNREACH') return SOCKS_REP.networkUnreachable;
  return SOCKS_REP.hostUnreachable;
}
