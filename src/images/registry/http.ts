/**
 * One HTTP(S) request to a registry (node:http/https): bounded time to the response head and between
 * bytes, redirects followed a bounded number of times (Authorization dropped when the host changes),
 * transport failures turned into `unavailable` errors that name the registry.
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { ForkboxError } from '../../domain/errors.ts';
import { REGISTRY } from '../../domain/limits.ts';
import { isLoopbackHost } from '../../util/address-ranges.ts';

export interface RequestOptions {
  method?: 'GET' | 'HEAD';
  headers?: Record<string, string>;
}

/** Hosts reached over plain HTTP: loopback always, others only when the daemon lists them. */
export function registryBaseUrl(registry: string, insecure: readonly string[]): string {
  const host = registry.replace(/:\d+$/, '');
  const plain = isLoopbackHost(host) || insecure.includes(registry);
  return `${plain ? 'http' : 'https'}://${registry}`;
}

function unreachable(url: URL, e: NodeJS.ErrnoException): ForkboxError {
  return new ForkboxError(
    'unavailable',
    `the registry at ${url.host} did not answer (${e.code ?? e.message}). Check the reference's host and port and that the registry is running, then retry.`,
    { registry: url.host },
  );
}

function once(url: URL, o: RequestOptions): Promise<IncomingMessage> {
  const mod = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(url, { method: o.method ?? 'GET', headers: o.headers ?? {} });
    const timer = setTimeout(() => {
      req.destroy(
        Object.assign(new Error('no response head in time'), { code: 'ETIMEDOUT' }) as NodeJS.ErrnoException,
      );
    }, REGISTRY.headersMs);
    req.setTimeout(REGISTRY.idleMs, () =>
      req.destroy(Object.assign(new Error('idle'), { code: 'ETIMEDOUT' })),
    );
    req.on('response', (res) => {
      clearTimeout(timer);
      resolve(res);
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(unreachable(url, e));
    });
    req.end();
  });
}

/** GET (or HEAD) `url`, following redirects. The caller reads or discards the body. */
export async function request(url: string, o: RequestOptions = {}): Promise<IncomingMessage> {
  let current = new URL(url);
  const headers = { ...(o.headers ?? {}) };
  for (let hop = 0; ; hop++) {
    const res = await once(current, { ...o, headers });
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if (status < 300 || status >= 400 || status === 304 || !location) return res;
    res.resume();
    if (hop >= REGISTRY.redirects)
      throw new ForkboxError('unavailable', `the registry at ${current.host} redirected too many times.`);
    const next = new URL(location, current);
    if (next.protocol !== 'http:' && next.protocol !== 'https:')
      throw new ForkboxError(
        'unavailable',
        `the registry redirected to a non-HTTP address (${next.protocol}).`,
      );
    if (next.host !== current.host) delete headers.authorization;
    current = next;
  }
}

/** The whole body, refusing more than `max` bytes. */
export async function readBody(res: IncomingMessage, max: number, what: string): Promise<Buffer> {
  const declared = Number(res.headers['content-length'] ?? '0');
  if (declared > max) {
    res.destroy();
    throw tooLarge(what, max);
  }
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of res) {
    n += (c as Buffer).length;
    if (n > max) {
      res.destroy();
      throw tooLarge(what, max);
    }
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

function tooLarge(what: string, max: number): ForkboxError {
  return new ForkboxError(
    'too_large',
    `the registry sent a ${what} over ${max} bytes; forkbox refuses it. Check that the reference names an ordinary image.`,
    { limit: max },
  );
}
