/**
 * A sandbox's network policy, and its one wire form (a string, both ways):
 *   `none`                          loopback only (the default)
 *   `allow:<entry>,<entry>,…`       egress only through the daemon's filtering proxy, to names on the list
 *   `open`                          full egress through user-mode NAT, minus the host filter's refusals
 *                                   (network/open-filter.ts; docs/ARCHITECTURE.md "Network egress")
 * An entry is a host name (`files.example.org`), a wildcard (`*.example.org`: any name below it, not the
 * name itself) or a CIDR (`198.51.100.0/24`, `2001:db8::/32`; a bare address is a /32 or /128). A CIDR
 * lets the sandbox reach those addresses by IP literal, and is the only way to reach a private range.
 */
import { isIP } from 'node:net';
import { ForkboxError } from './errors.ts';
import { SIZES } from './limits.ts';

export type NetworkMode = 'none' | 'allow' | 'open';

/** Modes from the narrowest to the widest: a cap of one allows those before it. */
export const NETWORK_MODES: readonly NetworkMode[] = ['none', 'allow', 'open'];

export interface NetworkPolicy {
  mode: NetworkMode;
  /** Lower-case names and `*.suffix` wildcards. */
  hosts: string[];
  /** CIDRs in canonical form (`addr/bits`). */
  cidrs: string[];
}

export const NETWORK_NONE: NetworkPolicy = Object.freeze({
  mode: 'none',
  hosts: [],
  cidrs: [],
}) as NetworkPolicy;

export const NETWORK_OPEN: NetworkPolicy = Object.freeze({
  mode: 'open',
  hosts: [],
  cidrs: [],
}) as NetworkPolicy;

const LABEL_RE = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

function badNetwork(why: string, value: string): ForkboxError {
  return new ForkboxError(
    'invalid_argument',
    `network '${value.slice(0, 80)}': ${why}. Use 'none', 'open' or 'allow:' followed by names, '*.suffix' wildcards and CIDRs, comma-separated (e.g. allow:files.example.org,198.51.100.0/24).`,
    { field: 'network' },
  );
}

function isHostName(h: string): boolean {
  if (h.length > 253) return false;
  const labels = h.split('.');
  return labels.length >= 1 && labels.every((l) => LABEL_RE.test(l)) && !/^[0-9.]+$/.test(h);
}

/** `addr/bits` canonical, or null when `s` is not an address or a CIDR. */
export function parseCidr(s: string): string | null {
  const slash = s.indexOf('/');
  const addr = slash < 0 ? s : s.slice(0, slash);
  const fam = isIP(addr);
  if (fam === 0) return null;
  const maxBits = fam === 4 ? 32 : 128;
  const bitsText = slash < 0 ? String(maxBits) : s.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(bitsText)) return null;
  const bits = Number(bitsText);
  if (bits > maxBits) return null;
  return `${addr.toLowerCase()}/${bits}`;
}

/** Parse the wire form; every entry is checked, duplicates dropped. */
export function parseNetwork(value: string): NetworkPolicy {
  if (value.length > SIZES.networkChars)
    throw badNetwork(`longer than ${SIZES.networkChars} characters`, value);
  const v = value.trim();
  if (v === 'none') return NETWORK_NONE;
  if (v === 'open') return NETWORK_OPEN;
  if (!v.startsWith('allow:')) throw badNetwork("not 'none', 'open' or 'allow:…'", value);
  const entries = v
    .slice('allow:'.length)
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '');
  if (entries.length === 0) throw badNetwork('an allow list needs at least one entry', value);
  if (entries.length > SIZES.networkEntries)
    throw badNetwork(`more than ${SIZES.networkEntries} entries`, value);
  const hosts = new Set<string>();
  const cidrs = new Set<string>();
  for (const e of entries) {
    const cidr = parseCidr(e);
    if (cidr) cidrs.add(cidr);
    else if (e.startsWith('*.') && isHostName(e.slice(2)) && e.slice(2).includes('.')) hosts.add(e);
    else if (isHostName(e)) hosts.add(e);
    else throw badNetwork(`'${e.slice(0, 80)}' is not a host name, a '*.suffix' wildcard or a CIDR`, value);
  }
  return { mode: 'allow', hosts: [...hosts], cidrs: [...cidrs] };
}

/** The wire form of a policy (what `parseNetwork` reads back to the same policy). */
export function formatNetwork(p: NetworkPolicy): string {
  return p.mode === 'allow' ? `allow:${[...p.hosts, ...p.cidrs].join(',')}` : p.mode;
}

/** Whether host name `h` (lower case) is on the list: an exact name, or below a `*.suffix` wildcard. */
export function hostAllowed(hosts: readonly string[], h: string): boolean {
  return hosts.some((e) =>
    e.startsWith('*.') ? h.endsWith(e.slice(1)) && h.length > e.length - 1 : e === h,
  );
}
