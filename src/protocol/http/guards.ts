/**
 * Edge guards of the TCP listener, run before anything else:
 *
 * - Host: a DNS-rebinding attack points an attacker's name at 127.0.0.1, so a victim's browser sends
 *   requests to our loopback port with `Host: evil.example`. Answering only the names we listen on
 *   (and the localhost names on a loopback listener) stops that, even with no tokens configured.
 * - Origin: browsers send `Origin` on cross-origin POSTs, including "simple" ones (text/plain) that
 *   need no CORS preflight. Without this check, any web page the user opens could run commands in
 *   sandboxes through a token-less loopback listener. A present Origin must be exactly one of ours
 *   (scheme, host and port); non-browser clients send none and are not affected.
 */
import { networkInterfaces } from 'node:os';
import type { MiddlewareHandler } from 'hono';
import { ForkboxError } from '../../domain/errors.ts';
import { isLoopbackHost } from '../../util/address-ranges.ts';
import { toHttpError } from '../rest/errors.ts';

export { isLoopbackHost };

const LOCALHOST_NAMES = ['localhost', '127.0.0.1', '[::1]', '::1'];

export function isWildcardHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '');
  return h === '0.0.0.0' || h === '::' || h === '';
}

/** `[v6]` form for URLs and Host headers. */
export function bracketed(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

export interface GuardConfig {
  /** Host-header names accepted (lower case; IPv6 in brackets). */
  hostnames: Set<string>;
  /** Origins accepted exactly (`http://host:port`). */
  origins: Set<string>;
}

/**
 * What the listener on `listenHost:port` accepts: the listen address, the localhost names on a
 * loopback listener, every local interface address on a wildcard listener, plus configured extras.
 */
export function guardConfig(opts: {
  listenHost: string;
  port: number;
  allowHosts?: string[];
  allowOrigins?: string[];
}): GuardConfig {
  const names = new Set<string>();
  const add = (h: string) => names.add(bracketed(h.toLowerCase()));
  if (isWildcardHost(opts.listenHost)) {
    for (const n of LOCALHOST_NAMES) add(n);
    for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) add(a.address);
  } else {
    add(opts.listenHost);
    if (isLoopbackHost(opts.listenHost)) for (const n of LOCALHOST_NAMES) add(n);
  }
  for (const h of opts.allowHosts ?? []) add(h);
  const origins = new Set<string>();
  for (const n of names) origins.add(`http://${n}:${opts.port}`);
  for (const o of opts.allowOrigins ?? []) origins.add(o.replace(/\/+$/, '').toLowerCase());
  return { hostnames: names, origins };
}

/** The hostname part of a Host header (`name:port`, `[v6]:port`), lower-cased. */
export function hostnameOf(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const i = h.lastIndexOf(':');
  return i >= 0 ? h.slice(0, i) : h;
}

/** Why a request fails the guards, or undefined when it passes. */
export function checkHostAndOrigin(
  cfg: GuardConfig,
  host: string | undefined,
  origin: string | undefined,
): string | undefined {
  if (host === undefined || !cfg.hostnames.has(hostnameOf(host))) {
    return `Host '${host ?? ''}' is not served here. Use the listen address, or add the name with --allow-host.`;
  }
  if (origin !== undefined && !cfg.origins.has(origin.toLowerCase())) {
    return `Origin '${origin}' is not allowed (cross-site requests are refused). Add it with --allow-origin if it is yours.`;
  }
  return undefined;
}

/** Middleware: 403 `permission_denied` for a foreign Host or Origin. */
export function hostOriginGuard(cfg: () => GuardConfig): MiddlewareHandler {
  return async (c, next) => {
    const why = checkHostAndOrigin(cfg(), c.req.header('host'), c.req.header('origin'));
    if (why !== undefined) {
      return c.json(toHttpError(new ForkboxError('permission_denied', why)).body, 403);
    }
    return next();
  };
}
