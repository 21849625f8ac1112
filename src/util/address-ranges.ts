/**
 * The daemon's one table of special address ranges and its one loopback check. The egress proxy of the
 * `allow` policy (network/addresses.ts), the host filter of the `open` policy (network/open-filter.ts), the
 * registry client's plain-HTTP rule, the OIDC discovery rule and the listener's guards all read it, so a
 * range one of them refuses is refused by every one.
 *
 * `always`: never reached from a sandbox, whatever its list names (loopback, unspecified, link-local — the
 * cloud metadata address —, multicast, reserved and broadcast). The others (private, shared, benchmarking,
 * IETF protocol assignments, unique-local, NAT64) are refused unless an `allow` list names them by CIDR, and
 * always by the `open` policy. IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are judged as the IPv4 address.
 */
import { isIP } from 'node:net';
import { inNet, type Net, parseNet, toBig, unmapped } from './cidr.ts';

export type RangeKind =
  | 'unspecified'
  | 'loopback'
  | 'link-local'
  | 'multicast'
  | 'reserved'
  | 'private'
  | 'shared'
  | 'protocol'
  | 'benchmarking'
  | 'unique-local'
  | 'nat64';

export interface AddressRange {
  cidr: string;
  kind: RangeKind;
  /** Refused to sandboxes whatever their policy names. */
  always: boolean;
}

const TABLE: readonly AddressRange[] = [
  { cidr: '0.0.0.0/8', kind: 'unspecified', always: true },
  { cidr: '127.0.0.0/8', kind: 'loopback', always: true },
  { cidr: '169.254.0.0/16', kind: 'link-local', always: true },
  { cidr: '224.0.0.0/4', kind: 'multicast', always: true },
  { cidr: '240.0.0.0/4', kind: 'reserved', always: true },
  { cidr: '::/128', kind: 'unspecified', always: true },
  { cidr: '::1/128', kind: 'loopback', always: true },
  { cidr: 'fe80::/10', kind: 'link-local', always: true },
  { cidr: 'ff00::/8', kind: 'multicast', always: true },
  { cidr: '10.0.0.0/8', kind: 'private', always: false },
  { cidr: '172.16.0.0/12', kind: 'private', always: false },
  { cidr: '192.168.0.0/16', kind: 'private', always: false },
  { cidr: '100.64.0.0/10', kind: 'shared', always: false },
  { cidr: '192.0.0.0/24', kind: 'protocol', always: false },
  { cidr: '198.18.0.0/15', kind: 'benchmarking', always: false },
  { cidr: 'fc00::/7', kind: 'unique-local', always: false },
  { cidr: '64:ff9b::/96', kind: 'nat64', always: false },
];

const PARSED: readonly { range: AddressRange; net: Net }[] = TABLE.map((range) => {
  const net = parseNet(range.cidr);
  if (!net) throw new Error(`bad range in the table: ${range.cidr}`);
  return { range, net };
});

/** Every special range (a copy). */
export function addressRanges(): AddressRange[] {
  return TABLE.map((r) => ({ ...r }));
}

/** The special range `addr` (an IP literal) lies in, or null for a public address or a non-address. */
export function rangeOf(addr: string): AddressRange | null {
  const raw = toBig(addr);
  if (!raw) return null;
  const x = unmapped(raw);
  return PARSED.find((p) => inNet(p.net, x))?.range ?? null;
}

/** The IPv4 ranges the `open` policy drops: every special range, none of them public. */
export function refusedV4(): string[] {
  return TABLE.filter((r) => !r.cidr.includes(':')).map((r) => r.cidr);
}

/**
 * True for a host only this machine can reach: the name `localhost`, or an IP literal in 127.0.0.0/8 or
 * ::1 (also written `[::1]`, `0:0:0:0:0:0:0:1` or `::ffff:127.x.y.z`). A name that merely starts with
 * `127.` (`127.attacker.example`) is a name like any other, and so is `0.0.0.0` (every interface).
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (h === 'localhost') return true;
  if (isIP(h) === 0) return false;
  return rangeOf(h)?.kind === 'loopback';
}
