/**
 * Addresses the egress proxy may connect to. Always refused, whatever the policy: loopback, link-local
 * (169.254.0.0/16 — the cloud metadata address — and fe80::/10), unspecified, multicast, broadcast and
 * reserved ranges, and every address of the host itself. Refused unless a CIDR on the sandbox's list names
 * them: private and shared ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) and NAT64.
 */
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

const ALWAYS_REFUSED = [
  '0.0.0.0/8',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '::/128',
  '::1/128',
  'fe80::/10',
  'ff00::/8',
];
const PRIVATE = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10',
  '192.0.0.0/24',
  'fc00::/7',
  '64:ff9b::/96',
];

interface Net {
  v6: boolean;
  base: bigint;
  bits: number;
}

function toBig(addr: string): { v6: boolean; n: bigint } | null {
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
function unmapped(x: { v6: boolean; n: bigint }): { v6: boolean; n: bigint } {
  return x.v6 && x.n >> 32n === 0xffffn ? { v6: false, n: x.n & 0xffffffffn } : x;
}

function parseNet(cidr: string): Net | null {
  const [addr = '', bitsText] = cidr.split('/');
  const a = toBig(addr);
  if (!a) return null;
  const max = a.v6 ? 128 : 32;
  const bits = bitsText === undefined ? max : Number(bitsText);
  if (!Number.isInteger(bits) || bits < 0 || bits > max) return null;
  const shift = BigInt(max - bits);
  return { v6: a.v6, base: (a.n >> shift) << shift, bits };
}

function inNet(net: Net, x: { v6: boolean; n: bigint }): boolean {
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

const ALWAYS = ALWAYS_REFUSED.map(parseNet).filter((n): n is Net => n !== null);
const PRIV = PRIVATE.map(parseNet).filter((n): n is Net => n !== null);

/** The host's own addresses, read at each check (interfaces come and go). */
function hostAddresses(): { v6: boolean; n: bigint }[] {
  const out: { v6: boolean; n: bigint }[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const i of list ?? []) {
      const b = toBig(i.address);
      if (b) out.push(unmapped(b));
    }
  }
  return out;
}

/**
 * Why the proxy must not connect to `addr`, or null when it may. `cidrs` are the sandbox's; `literal`: the
 * client named the address itself, which then must be inside one of them.
 */
export function refusal(addr: string, cidrs: readonly string[], literal: boolean): string | null {
  const raw = toBig(addr);
  if (!raw) return 'not an address';
  const x = unmapped(raw);
  if (ALWAYS.some((n) => inNet(n, x))) return 'loopback, link-local, multicast or reserved address';
  if (hostAddresses().some((h) => h.v6 === x.v6 && h.n === x.n)) return "the host's own address";
  const named = cidrs.map(parseNet).some((n) => n !== null && inNet(n, x));
  if (literal && !named) return 'address not on the allow list';
  if (!named && PRIV.some((n) => inNet(n, x))) return 'private address not named by a CIDR on the list';
  return null;
}
