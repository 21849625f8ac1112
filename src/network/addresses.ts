/**
 * Addresses the egress proxy may connect to. Always refused, whatever the policy: loopback, link-local
 * (169.254.0.0/16 — the cloud metadata address — and fe80::/10), unspecified, multicast, broadcast and
 * reserved ranges, and every address of the host itself. Refused unless a CIDR on the sandbox's list names
 * them: private and shared ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) and NAT64.
 */
import { networkInterfaces } from 'node:os';
import { inNet, type Net, parseNet, toBig, unmapped } from '../util/cidr.ts';

export { cidrContains } from '../util/cidr.ts';

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
