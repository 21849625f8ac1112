/**
 * Resolving a reference to one image manifest: GET the manifest with the OCI and Docker schema 2 media
 * types accepted, verify its digest, and when it is an index (manifest list) pick this host's platform
 * and fetch that manifest by digest. Everything the registry sends is checked for shape and bounded.
 */
import { createHash } from 'node:crypto';
import { ForkboxError } from '../../domain/errors.ts';
import { REGISTRY } from '../../domain/limits.ts';
import type { RegistryClient } from './client.ts';
import { readBody } from './http.ts';
import { DIGEST_RE, type ImageRef } from './reference.ts';

export const MEDIA = {
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerList: 'application/vnd.docker.distribution.manifest.list.v2+json',
} as const;
const ACCEPT = Object.values(MEDIA).join(', ');

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
}

export interface ResolvedManifest {
  /** Digest of the image manifest (not of the index it was picked from). */
  digest: string;
  config: Descriptor;
  /** Bottom layer first, as in the manifest. */
  layers: Descriptor[];
}

/** This host's architecture in OCI's words. */
export function hostArchitecture(arch: string = process.arch): string {
  const map: Record<string, string> = {
    x64: 'amd64',
    ia32: '386',
    arm64: 'arm64',
    arm: 'arm',
    ppc64: 'ppc64le',
  };
  return map[arch] ?? arch;
}

function malformed(ref: ImageRef, why: string): ForkboxError {
  return new ForkboxError(
    'unavailable',
    `the registry sent an unusable manifest for ${ref.canonical} (${why}). The image may be corrupt or in a format forkbox does not read (OCI or Docker schema 2).`,
    { ref: ref.canonical },
  );
}

function descriptor(ref: ImageRef, v: unknown, what: string): Descriptor {
  const d = v as Partial<Descriptor> | null;
  if (
    typeof d !== 'object' ||
    d === null ||
    typeof d.mediaType !== 'string' ||
    typeof d.digest !== 'string' ||
    !DIGEST_RE.test(d.digest) ||
    typeof d.size !== 'number' ||
    !Number.isSafeInteger(d.size) ||
    d.size < 0
  )
    throw malformed(ref, `a bad ${what} descriptor`);
  return { mediaType: d.mediaType, digest: d.digest, size: d.size };
}

async function fetchManifest(
  client: RegistryClient,
  ref: ImageRef,
  reference: string,
): Promise<{ digest: string; body: Record<string, unknown> }> {
  const res = await client.get(`manifests/${reference}`, ACCEPT);
  if (res.statusCode === 404) {
    res.resume();
    throw new ForkboxError(
      'not_found',
      `the registry ${ref.registry} has no manifest '${reference}' for ${ref.repository} (manifest unknown). Check the tag or digest.`,
      { ref: ref.canonical },
    );
  }
  if (res.statusCode !== 200) {
    res.resume();
    throw new ForkboxError(
      'unavailable',
      `the registry ${ref.registry} answered ${res.statusCode} for the manifest of ${ref.canonical}; retry later.`,
      { ref: ref.canonical, status: res.statusCode },
    );
  }
  const bytes = await readBody(res, REGISTRY.manifestBytes, 'manifest');
  const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  if (DIGEST_RE.test(reference) && digest !== reference) {
    throw new ForkboxError(
      'unavailable',
      `the manifest the registry sent for ${reference} has digest ${digest}: refused (digest mismatch). The registry or something between it and this host altered it.`,
      { ref: ref.canonical },
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw malformed(ref, 'not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw malformed(ref, 'not an object');
  const mt = (body as { mediaType?: unknown }).mediaType ?? res.headers['content-type'];
  return { digest, body: { ...(body as Record<string, unknown>), mediaType: mt } };
}

function pickPlatform(ref: ImageRef, body: Record<string, unknown>, arch: string): Descriptor {
  const list = body.manifests;
  if (!Array.isArray(list) || list.length > 1024) throw malformed(ref, 'an index without a manifest list');
  const found: string[] = [];
  for (const m of list) {
    const p = (m as { platform?: { os?: unknown; architecture?: unknown } }).platform;
    found.push(`${String(p?.os)}/${String(p?.architecture)}`);
    if (p?.os === 'linux' && p.architecture === arch) return descriptor(ref, m, 'platform manifest');
  }
  throw new ForkboxError(
    'not_found',
    `${ref.canonical} has no image for linux/${arch} (it has ${found.slice(0, 10).join(', ') || 'none'}). Pick an image built for this host's platform.`,
    { ref: ref.canonical },
  );
}

export async function resolveManifest(
  client: RegistryClient,
  ref: ImageRef,
  arch: string = hostArchitecture(),
): Promise<ResolvedManifest> {
  let m = await fetchManifest(client, ref, ref.reference);
  const isIndex = (t: unknown) => t === MEDIA.ociIndex || t === MEDIA.dockerList;
  if (isIndex(m.body.mediaType) || (m.body.mediaType === undefined && Array.isArray(m.body.manifests))) {
    const pick = pickPlatform(ref, m.body, arch);
    m = await fetchManifest(client, ref, pick.digest);
    if (isIndex(m.body.mediaType)) throw malformed(ref, 'an index inside an index');
  }
  const layers = m.body.layers;
  if (!Array.isArray(layers)) throw malformed(ref, 'no layer list');
  if (layers.length === 0) throw malformed(ref, 'no layers');
  if (layers.length > REGISTRY.layers)
    throw new ForkboxError(
      'too_large',
      `${ref.canonical} has ${layers.length} layers; forkbox takes at most ${REGISTRY.layers}. Squash the image.`,
      { limit: REGISTRY.layers },
    );
  return {
    digest: m.digest,
    config: descriptor(ref, m.body.config, 'config'),
    layers: layers.map((l) => descriptor(ref, l, 'layer')),
  };
}
