/**
 * The daemon's image allow list (`forkbox serve --image-allow PATTERN`, repeatable). A pattern is matched
 * against `registry/repository` (e.g. `127.0.0.1:5000/team/app`); `*` matches any run of characters,
 * '/' included. With no pattern, callers on the local socket (the host's own user) may pull any image
 * and remote callers (the TCP listener) none: a pull makes the daemon connect where the reference says,
 * loopback included, which a remote tenant must not be able to point at the host's own services.
 */
import type { ImageRef } from './reference.ts';

function globRe(pattern: string): RegExp {
  const body = pattern
    .split('*')
    .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`);
}

export function imageAllowed(ref: ImageRef, patterns: readonly string[], remote: boolean): boolean {
  if (patterns.length === 0) return !remote;
  const subject = `${ref.registry}/${ref.repository}`;
  return patterns.some((p) => globRe(p).test(subject));
}
