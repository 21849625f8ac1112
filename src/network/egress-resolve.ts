/**
 * Name resolution for the egress proxy. The proxy resolves every name itself and connects to the very
 * address it checked (never re-resolving: no DNS rebinding between the check and the connect).
 *
 * `FORKBOX_EGRESS_HOSTS` (`name=addr[|addr];name=addr`) replaces DNS with a fixed map: names not in it do
 * not resolve. Tests use it (they have no DNS, and must reach no address but their own test hosts).
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { ForkboxError } from '../domain/errors.ts';
import { EGRESS } from '../domain/limits.ts';

export type Resolver = (name: string) => Promise<string[]>;

/** Parse a hosts map (`name=addr[|addr];…`); a malformed one is refused at start-up. */
export function parseHostsMap(text: string): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const part of text.split(';')) {
    if (part.trim() === '') continue;
    const [name, addrs] = part.split('=');
    const list = (addrs ?? '').split('|').map((a) => a.trim());
    if (!name || list.some((a) => isIP(a) === 0))
      throw new ForkboxError(
        'invalid_argument',
        `FORKBOX_EGRESS_HOSTS entry '${part.slice(0, 80)}' is not name=address[|address]; fix or unset it.`,
      );
    map.set(name.trim().toLowerCase(), list);
  }
  return map;
}

export function createResolver(hostsMap?: Map<string, string[]>): Resolver {
  if (hostsMap) return async (name) => hostsMap.get(name) ?? [];
  return async (name) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('resolution timed out')), EGRESS.resolveMs);
    });
    try {
      const found = await Promise.race([lookup(name, { all: true, verbatim: true }), timeout]);
      return found.map((a) => a.address);
    } finally {
      clearTimeout(timer);
    }
  };
}
