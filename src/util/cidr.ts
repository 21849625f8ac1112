/**
 * CIDR arithmetic for IPv4 and IPv6 (IPv4-mapped IPv6 addresses read as the IPv4 address they are): parse
 * an address or a network, test membership and containment. Pure: the egress policy
 * (network/addresses.ts) and the daemon's network cap (service/sandboxes/network-cap.ts) build on it.
 */
import { isIP } from 'node:net';

export interface Net {
  v6: boolean;
  base: bigint;
  bits: number;
}

export function toBig(addr: string): { v6: boolean; n: bigint } | null {
  const fam = isIP(addr);
  if (fam === 4) {
    const n = addr.split('.').reduce((acc, p) => (acc << 8n) | BigInt(Number(p)), 0n);
    return { v6: false, n };
  }
  if (fam !== 6) return null;
  let a = addr.toLowerCase();
  const pct = a.indexOf('%');
  if (pct >= 0) a = a.slice(0, pct);
  // An embedded IPv4 tail (::ffff:127.0.0.1) becomes two hex groups.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (v4?.[1]) {
    const t = toBig(v4[1]);
    if (!t) return null;
    a = `${a.slice(0, a.length - v4[1].length)}${(t.n >> 16n).toString(16)}:${(t.n & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = a.split('::');
  const hs = head === '' ? [] : head.split(':');
  const ts = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? hs : [...hs, ...Array(8 - hs.length - ts.length).fill('0'), ...ts];
  if (groups.length !== 8) return null;
  return { v6: true, n: groups.reduce((acc, g) => (acc << 16n) | BigInt(Number.parseInt(g, 16)), 0n) };
}

/** An IPv4-mapped IPv6 address (::ffff:a.b.c.d) as the IPv4 address it is; others unchanged. */
export function unmapped(x: { v6: boolean; n: bigint }): { v6: boolean; n: bigint } {
  return x.v6 && x.n >> 32n === 0xffffn ? { v6: false, n: x.n & 0xffffffffn } : x;
}

export function parseNet(cidr: string): Net | null {
  const [addr = '', bitsText] = cidr.split('/');
  const a = toBig(addr);
  if (!a) return null;
  const max = a.v6 ? 128 : 32;
  const bits = bitsText === undefined ? max : Number(bitsText);
  if (!Number.isInteger(bits) || bits < 0 || bits > max) return null;
  const shift = BigInt(max - bits);
  return { v6: a.v6, base: (a.n >> shift) << shift, bits };
}

export function inNet(net: Net, x: { v6: boolean; n: bigint }): boolean {
  if (net.v6 !== x.v6) return false;
  const shift = BigInt((net.v6 ? 128 : 32) - net.bits);
  return x.n >> shift === net.base >> shift;
}

/** Whether CIDR `inner` lies wholly inside CIDR `outer`. */
export function cidrContains(outer: string, inner: string): boolean {
  const o = parseNet(outer);
  const i = parseNet(inner);
  return o !== null && i !== null && o.v6 === i.v6 && i.bits >= o.bits && inNet(o, { v6: i.v6, n: i.base });
}
