/**
 * A registry client for one pull: requests under `/v2/<repository>/`, with the distribution spec's
 * authentication — anonymous first; on 401, the `WWW-Authenticate` challenge decides: `Bearer` fetches a
 * pull token from the realm (with config.json's credentials when there are any), `Basic` sends them.
 */
import type { IncomingMessage } from 'node:http';
import { ForkboxError } from '../../domain/errors.ts';
import { REGISTRY } from '../../domain/limits.ts';
import { type BasicCredentials, credentialsFor } from './docker-config.ts';
import { readBody, registryBaseUrl, request } from './http.ts';
import type { ImageRef } from './reference.ts';

export interface RegistryClientOptions {
  env: Readonly<Record<string, string | undefined>>;
  /** Registries (host:port) reached over plain HTTP although not on loopback. */
  insecure: readonly string[];
}

export interface RegistryClient {
  /** GET `/v2/<repo>/<path>`; resolves with any status but 401 (which becomes `permission_denied`). */
  get(path: string, accept?: string): Promise<IncomingMessage>;
}

/** `Bearer realm="…",service="…"` → { scheme, params }. */
export function parseChallenge(header: string): { scheme: string; params: Record<string, string> } {
  const m = /^\s*(\w+)\s*(.*)$/s.exec(header);
  const params: Record<string, string> = {};
  for (const p of (m?.[2] ?? '').matchAll(/(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))/g)) {
    const key = p[1];
    if (key) params[key.toLowerCase()] = p[2] ?? p[3] ?? '';
  }
  return { scheme: (m?.[1] ?? '').toLowerCase(), params };
}

const basic = (c: BasicCredentials) =>
  `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;

export function createRegistryClient(ref: ImageRef, opts: RegistryClientOptions): RegistryClient {
  const base = `${registryBaseUrl(ref.registry, opts.insecure)}/v2/${ref.repository}/`;
  const creds = credentialsFor(ref.registry, opts.env);
  let authorization: string | undefined;

  function denied(detail: string): ForkboxError {
    return new ForkboxError(
      'permission_denied',
      `the registry ${ref.registry} refused access to ${ref.repository} (${detail}). ${creds ? 'Check the credentials for it in your Docker config.json.' : `Log in to it so that config.json ($DOCKER_CONFIG or ~/.docker) holds credentials for '${ref.registry}'.`}`,
      { registry: ref.registry },
    );
  }

  async function fetchToken(params: Record<string, string>): Promise<string> {
    const realm = params.realm;
    if (!realm) throw denied('a Bearer challenge without a realm');
    const url = new URL(realm);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw denied('a token realm that is not HTTP');
    if (params.service) url.searchParams.set('service', params.service);
    url.searchParams.set('scope', params.scope ?? `repository:${ref.repository}:pull`);
    const res = await request(url.toString(), creds ? { headers: { authorization: basic(creds) } } : {});
    const body = await readBody(res, REGISTRY.smallBodyBytes, 'token response');
    if (res.statusCode !== 200) throw denied(`the token service answered ${res.statusCode}`);
    let parsed: { token?: unknown; access_token?: unknown };
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      throw denied('the token service sent no JSON');
    }
    const token = parsed.token ?? parsed.access_token;
    if (typeof token !== 'string' || token === '') throw denied('the token service sent no token');
    return token;
  }

  async function send(path: string, accept?: string): Promise<IncomingMessage> {
    const headers: Record<string, string> = {};
    if (accept) headers.accept = accept;
    if (authorization) headers.authorization = authorization;
    return request(base + path, { headers });
  }

  return {
    async get(path, accept) {
      let res = await send(path, accept);
      if (res.statusCode !== 401) return res;
      const challenge = parseChallenge(String(res.headers['www-authenticate'] ?? ''));
      res.resume();
      if (challenge.scheme === 'bearer') authorization = `Bearer ${await fetchToken(challenge.params)}`;
      else if (challenge.scheme === 'basic' && creds) authorization = basic(creds);
      else throw denied(creds ? `an unsupported challenge '${challenge.scheme}'` : 'no credentials');
      res = await send(path, accept);
      if (res.statusCode === 401) {
        res.resume();
        throw denied('credentials refused');
      }
      return res;
    },
  };
}
