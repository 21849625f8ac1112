/**
 * Blobs: streamed from the registry to a file while hashed and counted; a blob whose size or sha256
 * differs from its descriptor is refused (and its file removed) before anything reads it.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ForkboxError } from '../../domain/errors.ts';
import { REGISTRY } from '../../domain/limits.ts';
import type { RegistryClient } from './client.ts';
import { readBody } from './http.ts';
import type { Descriptor } from './manifest.ts';
import type { ImageRef } from './reference.ts';

function mismatch(ref: ImageRef, d: Descriptor, why: string): ForkboxError {
  return new ForkboxError(
    'unavailable',
    `blob ${d.digest} of ${ref.canonical} failed verification (${why}): refused, nothing was stored. The registry or something between it and this host altered it; retry, or check the registry.`,
    { ref: ref.canonical, digest: d.digest },
  );
}

async function open(client: RegistryClient, ref: ImageRef, d: Descriptor) {
  const res = await client.get(`blobs/${d.digest}`);
  if (res.statusCode !== 200) {
    res.resume();
    throw new ForkboxError(
      res.statusCode === 404 ? 'not_found' : 'unavailable',
      `the registry ${ref.registry} answered ${res.statusCode} for blob ${d.digest} of ${ref.canonical} (${res.statusCode === 404 ? 'blob unknown' : 'retry later'}).`,
      { ref: ref.canonical, digest: d.digest },
    );
  }
  return res;
}

/** Download `d` to `file`, verifying size and digest; `onBytes` sees the running count. */
export async function downloadBlob(
  client: RegistryClient,
  ref: ImageRef,
  d: Descriptor,
  file: string,
  onBytes: (n: number) => void = () => {},
): Promise<void> {
  if (d.size > REGISTRY.layerBytes)
    throw new ForkboxError(
      'too_large',
      `layer ${d.digest} of ${ref.canonical} is ${d.size} bytes; forkbox takes at most ${REGISTRY.layerBytes}.`,
      { limit: REGISTRY.layerBytes },
    );
  const res = await open(client, ref, d);
  const hash = createHash('sha256');
  let n = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      n += chunk.length;
      if (n > d.size) {
        cb(mismatch(ref, d, `more than the declared ${d.size} bytes`));
        return;
      }
      hash.update(chunk);
      onBytes(n);
      cb(null, chunk);
    },
  });
  try {
    await pipeline(res, meter, createWriteStream(file, { mode: 0o600 }));
    if (n !== d.size) throw mismatch(ref, d, `${n} bytes, the manifest says ${d.size}`);
    const got = `sha256:${hash.digest('hex')}`;
    if (got !== d.digest) throw mismatch(ref, d, `its content hashes to ${got}`);
  } catch (e) {
    await rm(file, { force: true });
    if (e instanceof ForkboxError) throw e;
    throw new ForkboxError(
      'unavailable',
      `downloading blob ${d.digest} of ${ref.canonical} failed (${(e as Error).message}); nothing was stored. Retry the pull.`,
      { ref: ref.canonical },
    );
  }
}

/** A small blob (the image config) in memory, verified the same way. */
export async function readSmallBlob(client: RegistryClient, ref: ImageRef, d: Descriptor): Promise<Buffer> {
  if (d.size > REGISTRY.configBytes)
    throw new ForkboxError(
      'too_large',
      `the config of ${ref.canonical} is over ${REGISTRY.configBytes} bytes.`,
    );
  const res = await open(client, ref, d);
  const body = await readBody(res, d.size, 'config blob');
  if (body.length !== d.size) throw mismatch(ref, d, `${body.length} bytes, the manifest says ${d.size}`);
  const got = `sha256:${createHash('sha256').update(body).digest('hex')}`;
  if (got !== d.digest) throw mismatch(ref, d, `its content hashes to ${got}`);
  return body;
}
