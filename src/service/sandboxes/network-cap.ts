/**
 * The daemon-wide cap on network policies (`forkbox serve --network-max`, `--network-allow`): what a
 * create may ask for. Asking for more is `permission_denied`, naming what the daemon allows.
 */
import { ForkboxError } from '../../domain/errors.ts';
import {
  formatNetwork,
  hostAllowed,
  NETWORK_MODES,
  NETWORK_NONE,
  type NetworkMode,
  type NetworkPolicy,
  parseNetwork,
} from '../../domain/network.ts';
import { cidrContains } from '../../util/cidr.ts';

export interface NetworkCap {
  /** The widest mode a sandbox may have. */
  max: NetworkMode;
  /** When set, every entry of an allow list must be covered by one of these (else any list is allowed). */
  allow: NetworkPolicy | null;
  /**
   * Why this daemon cannot give a sandbox `open` egress (the host filter or the NAT missing, named), or
   * undefined when it can. Set by the composition root once it has tried to install the host filter.
   */
  openMissing?: string;
}

export const DEFAULT_NETWORK_CAP: NetworkCap = { max: 'allow', allow: null };

function covered(cap: NetworkPolicy, p: NetworkPolicy): string | null {
  for (const h of p.hosts) {
    const name = h.startsWith('*.') ? h.slice(2) : h;
    const ok = h.startsWith('*.')
      ? cap.hosts.includes(h) || cap.hosts.some((c) => c.startsWith('*.') && hostAllowed([c], name))
      : hostAllowed(cap.hosts, h);
    if (!ok) return h;
  }
  for (const c of p.cidrs) if (!cap.cidrs.some((d) => cidrContains(d, c))) return c;
  return null;
}

/** The policy a create asks for (`value`, default 'none'), checked against the daemon's cap. */
export function networkFor(cap: NetworkCap, value: string | undefined): NetworkPolicy {
  if (value === undefined) return NETWORK_NONE;
  const p = parseNetwork(value);
  if (p.mode === 'none') return p;
  if (cap.max === 'none')
    throw new ForkboxError(
      'permission_denied',
      "this daemon allows no network for sandboxes (forkbox serve --network-max none): create it with network 'none', or ask the daemon's operator to start it with --network-max allow.",
      { field: 'network' },
    );
  if (NETWORK_MODES.indexOf(p.mode) > NETWORK_MODES.indexOf(cap.max))
    throw new ForkboxError(
      'permission_denied',
      `this daemon allows network policies up to '${cap.max}' (forkbox serve --network-max ${cap.max}): ask for an allow list instead, or ask the daemon's operator to start it with --network-max open.`,
      { field: 'network' },
    );
  if (p.mode === 'open') {
    if (cap.openMissing !== undefined)
      throw new ForkboxError(
        'permission_denied',
        `this daemon cannot give sandboxes open egress: ${cap.openMissing}. Ask for an allow list instead, or ask the daemon's operator to fix that and restart it.`,
        { field: 'network' },
      );
    return p;
  }
  const outside = cap.allow ? covered(cap.allow, p) : null;
  if (outside !== null && cap.allow)
    throw new ForkboxError(
      'permission_denied',
      `network entry '${outside}' is outside what this daemon allows (${formatNetwork(cap.allow)}): ask only for entries within it, or ask the daemon's operator to widen --network-allow.`,
      { field: 'network', entry: outside },
    );
  return p;
}

/** The cap from `forkbox serve --network-max none|allow|open` and `--network-allow <entries>`. */
export function parseNetworkCap(max: string | undefined, allow: string | undefined): NetworkCap {
  if (max !== undefined && !(NETWORK_MODES as readonly string[]).includes(max))
    throw new ForkboxError(
      'invalid_argument',
      `--network-max must be 'none', 'allow' or 'open' (got '${max.slice(0, 40)}').`,
    );
  const list = allow === undefined ? null : parseNetwork(`allow:${allow}`);
  return { max: (max as NetworkMode | undefined) ?? DEFAULT_NETWORK_CAP.max, allow: list };
}
