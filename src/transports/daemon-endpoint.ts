/**
 * Where a DaemonClient sends its requests: the daemon's Unix socket (the local CLI and stdio MCP server),
 * or a TCP base URL of `forkbox serve --listen` (http:// or https://) with a bearer token. The client
 * (daemon-client.ts) is one implementation over either; this file holds what differs between them:
 * request options, the bearer header, and the error messages that say which endpoint failed and why.
 */
import type { ClientRequest, Agent as HttpAgentT, IncomingMessage, RequestOptions } from 'node:http';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import { ForkboxError } from '../domain/errors.ts';

/** node:https (and TLS under it) is loaded only for an https:// daemon URL: the local CLI never needs it. */
const loadHttps = (): typeof import('node:https') => createRequire(import.meta.url)('node:https');

export type DaemonEndpoint =
  | { kind: 'socket'; socketPath: string }
  | {
      kind: 'url';
      /** Validated base URL (see parseDaemonUrl); its path, if any, prefixes every route. */
      url: URL;
      /** Sent as `Authorization: Bearer`; never logged or put in a message. */
      token?: string | undefined;
    };

/**
 * Check a daemon URL (`--url` / FORKBOX_URL): http or https, a host, no credentials, query or fragment.
 * Credentials are refused because a URL ends up in argv, shell history and error messages, where a
 * token must not; the token goes in FORKBOX_TOKEN or --token-file instead.
 */
export function parseDaemonUrl(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    throw new ForkboxError(
      'invalid_argument',
      `'${raw}' is not a URL. Give the daemon's listener as http://HOST:PORT (e.g. http://127.0.0.1:7777).`,
    );
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new ForkboxError(
      'invalid_argument',
      `the daemon URL must start with http:// or https:// (got ${u.protocol}). E.g. http://127.0.0.1:7777.`,
    );
  }
  if (u.hostname === '') {
    throw new ForkboxError('invalid_argument', `the daemon URL '${raw}' has no host.`);
  }
  if (u.username !== '' || u.password !== '') {
    throw new ForkboxError(
      'invalid_argument',
      'the daemon URL must not carry credentials: put the token in FORKBOX_TOKEN or a --token-file instead.',
    );
  }
  if (u.search !== '' || u.hash !== '') {
    throw new ForkboxError(
      'invalid_argument',
      `the daemon URL must be a base URL without '?' or '#' (e.g. http://HOST:PORT).`,
    );
  }
  u.pathname = basePath(u);
  return u;
}

/** The path prefix of every route: the URL's path without trailing slashes ('' for the root). */
const basePath = (u: URL): string => u.pathname.replace(/\/+$/, '');

/** The URL as shown in messages: scheme, host, port and base path. */
export const describeUrl = (u: URL): string => `${u.origin}${basePath(u)}`;

/**
 * A token must be a single visible-ASCII word: anything else would be rejected by node as a header
 * value (or, with a stray newline from `echo`, silently split). The message never contains the token.
 */
export function checkToken(token: string, source: string): string {
  const t = token.trim();
  if (t === '')
    throw new ForkboxError('invalid_argument', `${source} is empty: it must hold the bearer token.`);
  if (!/^[\x21-\x7e]+$/.test(t)) {
    throw new ForkboxError(
      'invalid_argument',
      `${source} holds spaces or control characters: it must hold just the bearer token.`,
    );
  }
  return t;
}

export interface EndpointTransport {
  /** The socket path or URL, for messages. */
  readonly target: string;
  readonly endpoint: DaemonEndpoint;
  request(
    method: string,
    path: string,
    headers: Record<string, string>,
    onResponse: (res: IncomingMessage) => void,
  ): ClientRequest;
  /** The error for a failed connection (nothing listening, reset, timeout). */
  unavailable(e: NodeJS.ErrnoException): ForkboxError;
  /** Rewrite an error the daemon answered, where the endpoint knows more (401 over a URL). */
  refine(err: ForkboxError, status: number): ForkboxError;
  destroy(): void;
}

export function createTransport(endpoint: DaemonEndpoint): EndpointTransport {
  // Keep-alive: a CLI command or the stdio MCP server makes many small calls; reconnecting each time costs.
  const agentOpts = { keepAlive: true, maxSockets: 64 };
  if (endpoint.kind === 'socket') {
    const { socketPath } = endpoint;
    const agent = new HttpAgent(agentOpts);
    return {
      target: socketPath,
      endpoint,
      request(method, path, headers, onResponse) {
        // servername: without one, node's agent works it out with isIP(), whose first call compiles a large
        // regular expression (~10 ms of a CLI command's start); no TLS runs over the socket anyway.
        const opts: RequestOptions & { servername: string } = {
          socketPath,
          agent,
          method,
          path,
          headers,
          servername: 'localhost',
        };
        return httpRequest(opts, onResponse);
      },
      unavailable: (e) =>
        new ForkboxError(
          'unavailable',
          e.code === 'ENOENT' || e.code === 'ECONNREFUSED'
            ? `the forkbox daemon is not running (nothing answers on ${socketPath}). Start it with 'sudo forkbox serve'.`
            : `lost the connection to the forkbox daemon on ${socketPath} (${e.code ?? e.message}). Check its log (daemon.log in the state dir) and retry.`,
          { socketPath, cause: e.code ?? e.message },
        ),
      refine: (err) => err,
      destroy: () => agent.destroy(),
    };
  }

  const { url, token } = endpoint;
  const https = url.protocol === 'https:' ? loadHttps() : undefined;
  const agent: HttpAgentT = https ? new https.Agent(agentOpts) : new HttpAgent(agentOpts);
  const shown = describeUrl(url);
  const prefix = basePath(url);
  const base: RequestOptions = {
    protocol: url.protocol,
    // URL.hostname keeps IPv6 brackets; node's request wants the bare address.
    hostname: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port === '' ? (https ? 443 : 80) : Number(url.port),
    agent,
  };
  return {
    target: shown,
    endpoint,
    request(method, path, headers, onResponse) {
      const h = token === undefined ? headers : { ...headers, authorization: `Bearer ${token}` };
      const opts = { ...base, method, path: `${prefix}${path}`, headers: h };
      return https ? https.request(opts, onResponse) : httpRequest(opts, onResponse);
    },
    unavailable(e) {
      const code = e.code ?? e.message;
      const refused = ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT'];
      const tls = typeof e.code === 'string' && /CERT|SSL|TLS|SELF_SIGNED/.test(e.code);
      const msg = tls
        ? `TLS to the forkbox daemon at ${shown} failed (${code}). Check the server's certificate (NODE_EXTRA_CA_CERTS adds a CA) or the URL's scheme.`
        : refused.includes(String(e.code))
          ? `cannot reach the forkbox daemon at ${shown} (${code}). Check that 'forkbox serve --listen HOST:PORT' runs there and that --url / FORKBOX_URL names its address.`
          : `lost the connection to the forkbox daemon at ${shown} (${code}). Check that 'forkbox serve --listen' still runs there (and any proxy in between), then retry.`;
      return new ForkboxError('unavailable', msg, { url: shown, cause: code });
    },
    refine(err, status) {
      if (status !== 401) return err;
      return new ForkboxError(
        'unauthenticated',
        token === undefined
          ? `the forkbox daemon at ${shown} needs a bearer token: set FORKBOX_TOKEN (or pass --token-file FILE) to a token from its token file.`
          : `the forkbox daemon at ${shown} did not accept the token from FORKBOX_TOKEN / --token-file. Check it against the daemon's token file (reloaded on SIGHUP).`,
        { url: shown },
      );
    },
    destroy: () => agent.destroy(),
  };
}
