/**
 * The TCP listener's app: /mcp (MCP Streamable HTTP, both eras, and plain JSON-RPC; /mcp/<toolset> for
 * one toolset, e.g. /mcp/forkd), /sse + /messages (MCP's 2024-11-05 HTTP+SSE transport), /v1 (the REST
 * API, tenant-scoped),
 * /openapi.json, /healthz and /metrics, and /console (the web console: protocol/console/), behind the
 * edge guards, in this order:
 *
 *   accounting (metrics, audit) → Host/Origin guard (403) → bearer auth (401; a token of the token
 *   file, or a JWT from the OIDC issuer: oidc.ts, 503 while its keys cannot be fetched) → per-tenant
 *   concurrency (429) → body limits (413) → routes
 *
 * Every caller acts through `engine.scoped({ tenant, namespaces })` (namespaces: the token's limit, if
 * any): a tenant sees only its own sandboxes, and
 * another tenant's sandbox id is simply not found. Host administration routes (image build/import/
 * remove, gc, df) are not served here; see mountApiRoutes.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Context, Hono } from 'hono';
import { routePath } from 'hono/route';
import { ForkboxError, toForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi } from '../../service/api.ts';
import { type CallerContext, DEFAULT_TENANT } from '../../service/engine.ts';
import type { HostMetrics } from '../../service/host-metrics.ts';
import type { PoolStats } from '../../service/warm-pool.ts';
import { type AuditLog, outcomeOf, sandboxInPath } from '../audit.ts';
import { SESSION_SECONDS } from '../console/auth/cookie.ts';
import { sessionCaller } from '../console/auth/login.ts';
import { type ConsoleSessions, createConsoleSessions } from '../console/auth/sessions.ts';
import { createConsoleStreams } from '../console/events.ts';
import { consoleBodyLimit, createConsoleApp, isConsolePath, isConsoleStream } from '../console/routes.ts';
import { SSE_MESSAGES_PATH } from '../mcp/http/http-sse.ts';
import type { ToolLog } from '../mcp/kit/tool-kit.ts';
import { bodyLimitFor, bodyLimits, mountApiRoutes } from '../rest/api-routes.ts';
import { toHttpError } from '../rest/errors.ts';
import { CLIENT_HEADER } from '../rest/wire.ts';
import { type GuardConfig, hostOriginGuard } from './guards.ts';
import { createConcurrencyLimiter, DEFAULT_MAX_CONCURRENCY, onResponseDone } from './limits.ts';
import { createMcpEndpoints, MCP_BODY_LIMIT } from './mcp-endpoints.ts';
import { createMetrics, type HttpMetrics, instrumentApi } from './metrics.ts';
import { looksLikeJwt, type OidcVerifier } from './oidc.ts';
import { proxyToPort } from './port-proxy.ts';
import type { Caller, TokenStore } from './tokens.ts';

export { MCP_BODY_LIMIT };

export interface HttpAppOptions {
  engine: {
    scoped(ctx: CallerContext): ForkboxApi;
    attachSession(id: string, opts?: { graceMs?: number }): (end?: { graceMs?: number }) => void;
    /** The warm pool per template, for /metrics (absent: no pool metrics). */
    poolStats?(): PoolStats[];
  };
  version: string;
  /**
   * Bearer tokens; absent, and no `oidc` either: no authentication, every caller is tenant `default`
   * (loopback only).
   */
  tokens?: TokenStore | undefined;
  /** JWT bearer tokens from an OIDC issuer, beside `tokens` (checked first). */
  oidc?: OidcVerifier | undefined;
  /** Accepted Host names and Origins (a function so a reload can change it). */
  guard: () => GuardConfig;
  audit?: AuditLog | undefined;
  /** The daemon's own counters for /metrics (runtime refusals, file descriptors). */
  hostMetrics?: HostMetrics | undefined;
  maxConcurrency?: number | undefined;
  toolsets?: string[] | undefined;
  log?: ToolLog | undefined;
  /** The web console's bounds. */
  console?: { maxStreamsPerTenant?: number };
  mcp?: {
    sessionIdleMs?: number;
    maxSessionsPerTenant?: number;
    sessionGraceMs?: number;
    outputBytes?: number;
    fixtures?: boolean;
  };
}

export interface HttpApp {
  app: Hono;
  metrics: HttpMetrics;
  /** End console streams, then wait until no request is in flight (at most `timeoutMs`); true when drained. */
  drain(timeoutMs: number): Promise<boolean>;
  /** End MCP sessions (their sandboxes end with them) and in-flight MCP exchanges. */
  close(): Promise<void>;
}

interface RequestScope {
  caller?: Caller;
  errorCode?: string;
  tool?: string;
  sandbox?: string;
}

/** The MCP endpoints: /mcp, and /mcp/<toolset> for each toolset (route patterns as metrics see them). */
const MCP_ROUTES: ReadonlySet<string> = new Set(['/mcp', '/mcp/:toolset', SSE_MESSAGES_PATH]);
const isMcpPath = (path: string) => path === '/mcp' || /^\/mcp\/[^/]+$/.test(path);

const ANONYMOUS: Caller = { tenant: DEFAULT_TENANT, principal: 'anonymous' };

/**
 * Who a bearer token stands for: a static token first (constant time), then, when it has the shape of
 * a JWT and an issuer is configured, the issuer's verdict. A refusal comes back as the error to answer.
 */
async function authenticate(
  token: string,
  tokens: TokenStore | undefined,
  oidc: OidcVerifier | undefined,
): Promise<Caller | ForkboxError> {
  const caller = tokens?.lookup(token);
  if (caller) return caller;
  if (oidc && looksLikeJwt(token)) {
    try {
      return await oidc.verify(token);
    } catch (e) {
      return toForkboxError(e);
    }
  }
  return new ForkboxError(
    'unauthenticated',
    oidc
      ? 'the bearer token is not valid here. Send a token of the token file, or a JWT from the configured OIDC issuer.'
      : 'the bearer token is not valid here. Check the token, or ask for one from the token file.',
  );
}

function fail(
  c: Context,
  scope: RequestScope | undefined,
  err: ForkboxError,
  headers?: Record<string, string>,
) {
  if (scope) scope.errorCode = err.code;
  const { status, body } = toHttpError(err);
  return c.json(body, status, headers);
}

/** What an MCP POST asks for, for the audit line: the tool and its `sandbox` argument, or the method. */
async function peekMcp(req: Request, scope: RequestScope): Promise<void> {
  if (req.method !== 'POST') return;
  try {
    const msg = (await req.clone().json()) as {
      method?: unknown;
      params?: { name?: unknown; arguments?: { sandbox?: unknown; sandbox_id?: unknown } };
    };
    if (typeof msg?.method !== 'string') return;
    const name = msg.params?.name;
    scope.tool = msg.method === 'tools/call' && typeof name === 'string' ? name : msg.method;
    // `sandbox` (canonical tools), `sandbox_id` (the forkd and Podflare toolsets).
    const sb = msg.params?.arguments?.sandbox ?? msg.params?.arguments?.sandbox_id;
    if (typeof sb === 'string') scope.sandbox = sb;
  } catch {
    // Not JSON: the MCP handler answers it.
  }
}

/**
 * Bearer auth: every route needs a token when a token file or an OIDC issuer is configured. The console
 * authenticates by its session cookie instead (and only there); its routes decide what a request without
 * a valid one gets (the login page, a redirect to it, or 401).
 */
function bearerAuth(opts: HttpAppOptions, sessions: ConsoleSessions, scopeOf: () => RequestScope) {
  return async (c: Context, next: () => Promise<void>) => {
    const scope = scopeOf();
    if (!opts.tokens && !opts.oidc) {
      scope.caller = ANONYMOUS;
      return next();
    }
    if (isConsolePath(c.req.path)) {
      const auth = (token: string) => authenticate(token, opts.tokens, opts.oidc);
      const who = await sessionCaller({ authenticate: auth, sessions }, c.req.header('cookie'));
      if (who !== undefined) scope.caller = who;
      return next();
    }
    const m = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '');
    if (m?.[1] === undefined) {
      return fail(
        c,
        scope,
        new ForkboxError(
          'unauthenticated',
          'this listener needs a token: send "Authorization: Bearer <token>".',
        ),
        { 'WWW-Authenticate': 'Bearer realm="forkbox"' },
      );
    }
    const authenticated = await authenticate(m[1], opts.tokens, opts.oidc);
    if (authenticated instanceof ForkboxError) {
      const reason = authenticated.details?.reason;
      const description = typeof reason === 'string' ? `, error_description="${reason}"` : '';
      const headers =
        authenticated.code === 'unauthenticated'
          ? { 'WWW-Authenticate': `Bearer realm="forkbox", error="invalid_token"${description}` }
          : undefined;
      return fail(c, scope, authenticated, headers);
    }
    scope.caller = authenticated;
    return next();
  };
}

export function createHttpApp(opts: HttpAppOptions): HttpApp {
  const als = new AsyncLocalStorage<RequestScope>();
  const limiter = createConcurrencyLimiter(opts.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY);
  // Tenants of the token file, and those OIDC callers have acted as (known once they call).
  const tenantsForMetrics = () => [
    ...new Set([DEFAULT_TENANT, ...(opts.tokens?.tenants() ?? []), ...tenantApis.keys()]),
  ];
  const engine = opts.engine;
  const metrics = createMetrics({
    host: opts.hostMetrics,
    ...(engine.poolStats ? { pool: () => engine.poolStats?.() ?? [] } : {}),
    async sandboxCounts() {
      const out: Record<string, number> = {};
      for (const tenant of tenantsForMetrics()) {
        const { sandboxes } = await opts.engine.scoped({ tenant }).status();
        for (const [state, count] of Object.entries(sandboxes)) out[state] = (out[state] ?? 0) + count;
      }
      return out;
    },
  });
  const noteError = (code: string) => {
    const s = als.getStore();
    if (s && s.errorCode === undefined) s.errorCode = code;
  };
  // One API per tenant and namespace limit (a token limited to namespaces sees only those).
  const tenantApis = new Map<string, ForkboxApi>();
  const apiFor = (caller: Caller): ForkboxApi => {
    const key = `${caller.tenant}\0${caller.namespaces?.join(',') ?? '*'}`;
    let api = tenantApis.get(key);
    if (!api) {
      const ns = caller.namespaces ? { namespaces: caller.namespaces } : {};
      api = instrumentApi(
        opts.engine.scoped({ tenant: caller.tenant, remote: true, ...ns }),
        metrics,
        noteError,
      );
      tenantApis.set(key, api);
    }
    return api;
  };
  const callerOf = (): Caller => als.getStore()?.caller ?? ANONYMOUS;

  const consoleStreams = createConsoleStreams(opts.console?.maxStreamsPerTenant);
  const consoleSessions = createConsoleSessions({ ttlMs: SESSION_SECONDS * 1000 });
  const mcpEndpoints = createMcpEndpoints(opts, (api) => instrumentApi(api, metrics, noteError));
  const { mcp, mcpFor } = mcpEndpoints;

  const app = new OpenAPIHono();
  app.onError((err, c) => fail(c, als.getStore(), toForkboxError(err)));
  app.notFound((c) =>
    fail(
      c,
      als.getStore(),
      new ForkboxError('not_found', `no route ${c.req.method} ${c.req.path}. See /openapi.json.`),
    ),
  );

  // Accounting: HTTP metrics and the audit line, once the response (streamed or not) is done.
  app.use('*', async (c, next) => {
    const scope: RequestScope = {};
    const started = performance.now();
    await als.run(scope, () => next());
    const route = routePath(c, -1);
    const matched = route !== '' && !route.endsWith('*') ? route : 'unmatched';
    const sandbox = scope.sandbox ?? sandboxInPath(c.req.path);
    const status = c.res.status;
    const finish = () => {
      metrics.httpRequests.inc({ method: c.req.method, route: matched, status: String(status) });
      if (c.req.path === '/healthz' || !opts.audit) return;
      opts.audit.write({
        door: 'http',
        // Not authenticated: '?', which no tenant can be named (a tenant 'anonymous' could, and would
        // then read these lines back on the console's audit page).
        tenant: scope.caller?.tenant ?? '?',
        namespaces: scope.caller?.namespaces,
        client: c.req.header(CLIENT_HEADER),
        route: MCP_ROUTES.has(matched) ? matched : `${c.req.method} ${matched}`,
        tool: scope.tool,
        sandbox,
        outcome: outcomeOf(scope.errorCode, status),
        status,
        durationMs: performance.now() - started,
      });
    };
    c.res = onResponseDone(c.res, finish);
  });

  app.use('*', hostOriginGuard(opts.guard));

  app.get('/healthz', (c) => c.json({ ok: true, version: opts.version }));
  app.get('/openapi.json', (c) =>
    c.json(
      app.getOpenAPI31Document({
        openapi: '3.1.0',
        info: {
          title: 'forkbox',
          version: opts.version,
          description:
            'Sandboxes for AI agents. Errors are {"error":{"code","message"}}. Authenticate with "Authorization: Bearer <token>" (a token of the token file, or a JWT from the configured OIDC issuer) when the listener has either.',
        },
        security: opts.tokens || opts.oidc ? [{ bearer: [] }] : [],
      }),
    ),
  );
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });

  app.use(
    '*',
    bearerAuth(opts, consoleSessions, () => als.getStore() as RequestScope),
  );

  app.get('/metrics', async (c) =>
    c.body(await metrics.registry.metrics(), 200, { 'Content-Type': metrics.registry.contentType }),
  );

  // Per-tenant concurrency. A legacy MCP session's GET stream (/mcp, /sse) lives as long as the session,
  // so it is bounded by the per-tenant session limit instead of holding a request slot.
  app.use('*', async (c, next) => {
    // The console's event streams are bounded per tenant by their own cap (console/events.ts).
    const streaming = isMcpPath(c.req.path) || c.req.path === '/sse' || isConsoleStream(c.req.path);
    if (c.req.method === 'GET' && streaming) return next();
    const release = limiter.acquire(callerOf().tenant);
    try {
      await next();
    } catch (e) {
      release();
      throw e;
    }
    c.res = onResponseDone(c.res, release);
  });

  app.use(
    '*',
    bodyLimits((method, path) =>
      isMcpPath(path) || path === SSE_MESSAGES_PATH
        ? MCP_BODY_LIMIT
        : isConsolePath(path)
          ? consoleBodyLimit(path)
          : bodyLimitFor(method, path),
    ),
  );

  app.on(['GET', 'POST', 'DELETE'], '/mcp', async (c) => {
    const caller = callerOf();
    await peekMcp(c.req.raw, als.getStore() as RequestScope);
    return mcp.fetch(c.req.raw, { ...caller, api: apiFor(caller) });
  });
  // The 2024-11-05 HTTP+SSE transport, behind the same guards, token and body bound as /mcp.
  app.get('/sse', (c) => {
    const caller = callerOf();
    return mcp.sse(c.req.raw, { ...caller, api: apiFor(caller) });
  });
  app.post(SSE_MESSAGES_PATH, async (c) => {
    const caller = callerOf();
    await peekMcp(c.req.raw, als.getStore() as RequestScope);
    return mcp.sse(c.req.raw, { ...caller, api: apiFor(caller) });
  });
  app.on(['GET', 'POST', 'DELETE'], '/mcp/:toolset', async (c) => {
    const caller = callerOf();
    const server = mcpFor(c.req.param('toolset'));
    await peekMcp(c.req.raw, als.getStore() as RequestScope);
    return server.fetch(c.req.raw, { ...caller, api: apiFor(caller) });
  });
  // A sandbox's published port, proxied (plain HTTP): same token and tenant scope as the API.
  app.all('/v1/sandboxes/:id/ports/:port{[0-9]+}/*', (c) => proxyToPort(c.req.raw, apiFor(callerOf())));
  app.all('/v1/sandboxes/:id/ports/:port{[0-9]+}', (c) => proxyToPort(c.req.raw, apiFor(callerOf())));
  mountApiRoutes(app, { admin: false, api: () => apiFor(callerOf()) });
  app.route(
    '/console',
    createConsoleApp({
      authRequired: opts.tokens !== undefined || opts.oidc !== undefined,
      authenticate: (token) => authenticate(token, opts.tokens, opts.oidc),
      caller: () => als.getStore()?.caller,
      api: apiFor,
      streams: consoleStreams,
      sessions: consoleSessions,
      audit: opts.audit,
    }),
  );

  return {
    app: app as unknown as Hono,
    metrics,
    drain: (timeoutMs) => {
      // Live console streams are views, not work: end them now rather than hold the shutdown.
      consoleStreams.closeAll();
      return limiter.drained(timeoutMs);
    },
    close: () => {
      consoleStreams.closeAll();
      return mcpEndpoints.close();
    },
  };
}
