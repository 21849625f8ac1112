/**
 * The TCP listener, assembled: security checks on the configuration, token file, audit log, the app
 * (protocol/http/app.ts) and the server (http-server.ts). `forkbox serve` and the integration tests start
 * it the same way.
 */
import { join } from 'node:path';
import { ForkboxError } from '../domain/errors.ts';
import { PORTS } from '../domain/limits.ts';
import type { Logger } from '../domain/logger.ts';
import type { AuditLog } from '../protocol/audit.ts';
import { createHttpApp, type HttpApp, type HttpAppOptions } from '../protocol/http/app.ts';
import { guardConfig, isLoopbackHost } from '../protocol/http/guards.ts';
import { createOidcVerifier, type OidcSettings, type OidcVerifier } from '../protocol/http/oidc.ts';
import { loadTokenFile, type TokenStore } from '../protocol/http/tokens.ts';
import { createAuditFile } from './audit-file.ts';
import { type HttpServer, serveHttp } from './http-server.ts';

export interface ListenerOptions {
  engine: HttpAppOptions['engine'];
  version: string;
  host: string;
  port: number;
  /** Path of the token file; absent: no authentication (allowed on loopback only). */
  tokenFile?: string | undefined;
  /** JWT bearer tokens from an OIDC issuer, beside (or instead of) the token file. */
  oidc?: OidcSettings | undefined;
  /** The daemon's audit log, shared with its other doors (not closed by the listener). */
  audit?: AuditLog | undefined;
  /** Without `audit`: directory of an audit.log of the listener's own (the state dir); absent: none. */
  stateDir?: string | undefined;
  maxConcurrency?: number | undefined;
  allowHosts?: string[] | undefined;
  allowOrigins?: string[] | undefined;
  toolsets?: string[] | undefined;
  log?: Pick<Logger, 'debug' | 'info' | 'warn'> | undefined;
  mcp?: HttpAppOptions['mcp'];
  hostMetrics?: HttpAppOptions['hostMetrics'];
}

export interface Listener {
  server: HttpServer;
  http: HttpApp;
  tokens: TokenStore | undefined;
  oidc: OidcVerifier | undefined;
  /** Re-read the token file (SIGHUP). Throws, keeping the old tokens, when the file is invalid. */
  reloadTokens(): void;
  /** Stop accepting, drain (up to `graceMs`), end MCP sessions, close its own audit log. */
  close(graceMs?: number): Promise<void>;
}

/**
 * Refuse configurations that would expose the engine: a listener others can reach must authenticate.
 * Without tokens (a token file or an OIDC issuer), whoever can connect controls sandboxes, so that is
 * only allowed on loopback.
 */
export function checkListenSecurity(
  host: string,
  tokenFile: string | undefined,
  oidc?: OidcSettings | undefined,
): void {
  if (tokenFile === undefined && oidc === undefined && !isLoopbackHost(host)) {
    throw new ForkboxError(
      'invalid_argument',
      `refusing to listen on ${host} without authentication: anyone who can reach it could run commands in sandboxes. Pass --token-file FILE (or FORKBOX_TOKEN_FILE) with 'TOKEN TENANT' lines, or --oidc-issuer and --oidc-audience, or listen on 127.0.0.1.`,
      { host },
    );
  }
  if (host.replace(/^\[|\]$/g, '') === PORTS.publishHost) {
    throw new ForkboxError(
      'invalid_argument',
      `refusing to listen on ${host}: sandboxes' published ports are served there, and a page one serves would be of the console's site. Listen on 127.0.0.1 (or another address).`,
      { host },
    );
  }
}

export async function startListener(opts: ListenerOptions): Promise<Listener> {
  checkListenSecurity(opts.host, opts.tokenFile, opts.oidc);
  const warn = (m: string) => opts.log?.warn({}, m);
  const tokens = opts.tokenFile === undefined ? undefined : loadTokenFile(opts.tokenFile, warn);
  const oidc = opts.oidc === undefined ? undefined : createOidcVerifier(opts.oidc);
  // Discovery failing does not stop the daemon (static tokens and the socket keep working): it is
  // said here and retried when a JWT arrives; until then JWTs are answered 503 `unavailable`.
  await oidc?.start().then(
    () => opts.log?.info({ issuer: opts.oidc?.issuer }, 'OIDC issuer discovered; its JWTs are accepted'),
    (e: Error) =>
      opts.log?.warn(
        { issuer: opts.oidc?.issuer },
        `${e.message} JWTs are refused (503) until the issuer answers; discovery is retried when one arrives.`,
      ),
  );
  const ownAudit: AuditLog | undefined =
    opts.audit !== undefined || opts.stateDir === undefined
      ? undefined
      : createAuditFile(join(opts.stateDir, 'audit.log'), {
          onError: (e) => opts.log?.warn({ err: e.message }, 'audit log write failed'),
        });
  const audit = opts.audit ?? ownAudit;
  // The guard needs the real port (port 0 binds a random one), known only after listening.
  let port = opts.port;
  const guard = () =>
    guardConfig({
      listenHost: opts.host,
      port,
      ...(opts.allowHosts ? { allowHosts: opts.allowHosts } : {}),
      ...(opts.allowOrigins ? { allowOrigins: opts.allowOrigins } : {}),
    });
  let cached = guard();
  const http = createHttpApp({
    engine: opts.engine,
    version: opts.version,
    tokens,
    oidc,
    guard: () => cached,
    audit,
    hostMetrics: opts.hostMetrics,
    maxConcurrency: opts.maxConcurrency,
    toolsets: opts.toolsets,
    log: opts.log,
    ...(opts.mcp ? { mcp: opts.mcp } : {}),
  });
  let server: HttpServer;
  try {
    server = await serveHttp(http.app, opts.host, opts.port);
  } catch (e) {
    await http.close();
    await ownAudit?.close();
    throw e;
  }
  port = server.port;
  cached = guard();
  opts.log?.info(
    {
      url: server.url,
      tenants: tokens?.tenants().length ?? 0,
      auth:
        [tokens ? 'token file' : '', oidc ? 'oidc' : ''].filter((a) => a).join(' + ') || 'none (loopback)',
    },
    'forkbox HTTP listener (MCP at /mcp, REST at /v1, /openapi.json, /metrics)',
  );
  return {
    server,
    http,
    tokens,
    oidc,
    reloadTokens: () => tokens?.reload(),
    async close(graceMs = 30_000) {
      await server.close({ graceMs, drain: http.drain });
      await http.close();
      await ownAudit?.close();
    },
  };
}
