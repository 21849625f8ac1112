/**
 * Registry references: `host[:port]/path/name[:tag][@sha256:<hex>]`. A reference without a registry host
 * is accepted only when the daemon is configured with a default registry (FORKBOX_DEFAULT_REGISTRY):
 * forkbox names no public registry itself. Local image names never contain '/', so a string with one is
 * a reference.
 */
import { createHash } from 'node:crypto';
import { errors } from '../../domain/errors.ts';
import { REGISTRY } from '../../domain/limits.ts';

export interface ImageRef {
  /** `host` or `host:port`, as written. */
  registry: string;
  /** `path/name`, lower case. */
  repository: string;
  tag: string | null;
  digest: string | null;
  /** What the manifest is fetched by: the digest when given, else the tag. */
  reference: string;
  /** `registry/repository[:tag][@digest]`, with the default tag filled in. */
  canonical: string;
}

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;
const TAG = /^[\w][\w.-]{0,127}$/;
export const DIGEST_RE = /^sha256:[a-f0-9]{64}$/;

/** Whether `s` names a registry image rather than a local image name. */
export function isRegistryRef(s: string): boolean {
  return s.includes('/');
}

function bad(ref: string, why: string): never {
  throw errors.invalid(
    `invalid image reference '${ref.slice(0, 300)}': ${why}. Write it as host:port/name:tag or host:port/name@sha256:<hex>.`,
    { ref: ref.slice(0, 300) },
  );
}

export function parseReference(ref: string, defaultRegistry?: string): ImageRef {
  if (ref.length === 0 || ref.length > REGISTRY.refChars)
    bad(ref, `use 1 to ${REGISTRY.refChars} characters`);
  let rest = ref;
  let digest: string | null = null;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST_RE.test(digest)) bad(ref, 'the digest must be sha256: and 64 lower-case hex digits');
  }
  let tag: string | null = null;
  const lastSlash = rest.lastIndexOf('/');
  const colon = rest.lastIndexOf(':');
  if (colon > lastSlash) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) bad(ref, `'${tag}' is not a valid tag`);
  }
  const parts = rest.split('/');
  const first = parts[0] ?? '';
  let registry: string;
  if (parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    registry = first;
    parts.shift();
    if (!HOST.test(registry)) bad(ref, `'${registry}' is not a registry host`);
  } else if (defaultRegistry) {
    registry = defaultRegistry;
  } else {
    bad(
      ref,
      'it names no registry host and this daemon has no default registry (set FORKBOX_DEFAULT_REGISTRY)',
    );
  }
  for (const c of parts) if (!COMPONENT.test(c)) bad(ref, `'${c}' is not a valid name component`);
  const repository = parts.join('/');
  if (tag === null && digest === null) tag = 'latest';
  const canonical = `${registry}/${repository}${tag ? `:${tag}` : ''}${digest ? `@${digest}` : ''}`;
  return { registry, repository, tag, digest, reference: digest ?? (tag as string), canonical };
}

/**
 * The local image name a reference is stored under: readable (`name-tag`) plus a hash of the whole
 * canonical reference, so two registries' `app:1` never share a name.
 */
export function localImageName(ref: ImageRef): string {
  const base = ref.repository.split('/').pop() ?? 'image';
  const suffix = ref.tag ?? ref.digest?.slice(7, 19) ?? '';
  const h = createHash('sha256').update(ref.canonical).digest('hex').slice(0, 8);
  return `${`${base}-${suffix}`.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 50)}-${h}`;
}
