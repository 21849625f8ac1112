/**
 * Addresses the egress proxy may connect to, judged by the daemon's one range table
 * (util/address-ranges.ts). Always refused, whatever the policy: the table's `always` ranges (loopback,
 * link-local — the cloud metadata address —, unspecified, multicast, reserved) and every address of the host
 * itself. Refused unless a CIDR on the sandbox's list names them: the table's other ranges (private, shared,
 * benchmarking, protocol, unique-local, NAT64) — the same the `open` policy's filter drops.
 */
import { networkInterfaces } from 'node:os';
import { rangeOf } from '../util/address-ranges.ts';
import { inNet, parseNet, toBig, unmapped } from '../util/cidr.ts';

export { cidrContains } from '../util/cidr.ts';

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
  const special = rangeOf(addr);
  if (special?.always) return 'loopback, link-local, multicast or reserved address';
  if (hostAddresses().some((h) => h.v6 === x.v6 && h.n === x.n)) return "the host's own address";
  const named = cidrs.map(parseNet).some((n) => n !== null && inNet(n, x));
  if (literal && !named) return 'address not on the allow list';
  if (!named && special) return `${special.kind} address not named by a CIDR on the list`;
  return null;
}
