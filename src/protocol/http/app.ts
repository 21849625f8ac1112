/**
 * The TCP listener's app: /mcp (MCP Streamable HTTP, both eras, and plain JSON-RPC), /sse + /messages
 * (MCP's 2024-11-05 HTTP+SSE transport), /v1 (the REST API, tenant-scoped),
 * /openapi.json, /healthz and /metrics, behind the edge guards, in this order:
 *
 *   accounting (metrics, audit) → Host/Origin guard (403) → bearer auth (401) → per-tenant
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
import { type AuditLog, outcomeOf, sandboxInPath } from '../audit.ts';
import { createMcpHttp } from '../mcp/http.ts';
import { SSE_MESSAGES_PATH } from '../mcp/http-sse.ts';
import type { ToolLog } from '../mcp/tool-kit.ts';
import { bodyLimitFor, bodyLimits, mountApiRoutes } from '../rest/api-routes.ts';
import { toHttpError } from '../rest/errors.ts';
import { EXEC_BODY_LIMIT } from '../rest/local-schemas.ts';
import { CLIENT_HEADER } from '../rest/wire.ts';
import { type GuardConfig, hostOriginGuard } from './guards.ts';
import { createConcurrencyLimiter, DEFAULT_MAX_CONCURRENCY, onResponseDone } from './limits.ts';
import { createMetrics, type HttpMetrics, instrumentApi } from './metrics.ts';
import { proxyToPort } from './port-proxy.ts';
import type { Caller, TokenStore } from './tokens.ts';

/** MCP bodies carry file contents and stdin inline (base64 in JSON): the sync-exec bound. */
export const MCP_BODY_LIMIT = EXEC_BODY_LIMIT;

export interface HttpAppOptions {
  engine: {
    scoped(ctx: CallerContext): ForkboxApi;
    attachSession(id: string, opts?: { graceMs?: number }): (end?: { graceMs?: number }) => void;
  };
  version: string;
  /** Bearer tokens; absent: no authentication, every caller is tenant `default` (loopback only). */
  tokens?: TokenStore | undefined;
  /** Accepted Host names and Origins (a function so a reload can change it). */
  guard: () => GuardConfig;
  audit?: AuditLog | undefined;
  /** The daemon's own counters for /metrics (runtime refusals, file descriptors). */
  hostMetrics?: HostMetrics | undefined;
  maxConcurrency?: number | undefined;
  toolsets?: string[] | undefined;
  log?: ToolLog | undefined;
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
  /** Wait until no request is in flight, at most `timeoutMs`; true when drained. */
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

const ANONYMOUS: Caller = { tenant: DEFAULT_TENANT, principal: 'anonymous' };

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
      params?: { name?: unknown; arguments?: { sandbox?: unknown } };
    };
    if (typeof msg?.method !== 'string') return;
    const name = msg.params?.name;
    scope.tool = msg.method === 'tools/call' && typeof name === 'string' ? name : msg.method;
    const sb = msg.params?.arguments?.sandbox;
    if (typeof sb === 'string') scope.sandbox = sb;
  } catch {
    // Not JSON: the MCP handler answers it.
  }
}

export function createHttpApp(opts: HttpAppOptions): HttpApp {
  const als = new AsyncLocalStorage<RequestScope>();
  const limiter = createConcurrencyLimiter(opts.maxConcurrency ?? DEFAULT_MAX_CONCURRENCY);
  const tenantsForMetrics = () => [...new Set([DEFAULT_TENANT, ...(opts.tokens?.tenants() ?? [])])];
  const metrics = createMetrics({
    host: opts.hostMetrics,
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

  const mcp = createMcpHttp({
    sessionApi: (tenant, session, namespaces) =>
      instrumentApi(
        opts.engine.scoped({ tenant, session, remote: true, ...(namespaces ? { namespaces } : {}) }),
        metrics,
        noteError,
      ),
    attachSession: (id, o) => opts.engine.attachSession(id, o),
    version: opts.version,
    maxBodyBytes: MCP_BODY_LIMIT,
    ...(opts.toolsets ? { toolsets: opts.toolsets } : {}),
    ...(opts.log ? { log: opts.log } : {}),
    ...(opts.mcp?.sessionIdleMs !== undefined ? { sessionIdleMs: opts.mcp.sessionIdleMs } : {}),
    ...(opts.mcp?.maxSessionsPerTenant !== undefined
      ? { maxSessionsPerTenant: opts.mcp.maxSessionsPerTenant }
      : {}),
    ...(opts.mcp?.sessionGraceMs !== undefined ? { sessionGraceMs: opts.mcp.sessionGraceMs } : {}),
    ...(opts.mcp?.outputBytes !== undefined ? { outputBytes: opts.mcp.outputBytes } : {}),
    ...(opts.mcp?.fixtures ? { fixtures: true } : {}),
  });

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
        tenant: scope.caller?.tenant ?? 'anonymous',
        client: c.req.header(CLIENT_HEADER),
        route: matched === '/mcp' || matched === SSE_MESSAGES_PATH ? matched : `${c.req.method} ${matched}`,
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
            'Sandboxes for AI agents. Errors are {"error":{"code","message"}}. Authenticate with "Authorization: Bearer <token>" when the listener has a token file.',
        },
        security: opts.tokens ? [{ bearer: [] }] : [],
      }),
    ),
  );
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });

  // Bearer auth: every other route needs a token when a token file is configured.
  app.use('*', async (c, next) => {
    const scope = als.getStore() as RequestScope;
    if (!opts.tokens) {
      scope.caller = ANONYMOUS;
      return next();
    }
    const m = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '');
    const caller = m?.[1] === undefined ? undefined : opts.tokens.lookup(m[1]);
    if (!caller) {
      const challenge = m ? 'Bearer realm="forkbox", error="invalid_token"' : 'Bearer realm="forkbox"';
      return fail(
        c,
        scope,
        new ForkboxError(
          'unauthenticated',
          m
            ? 'the bearer token is not valid here. Check the token, or ask for one from the token file.'
            : 'this listener needs a token: send "Authorization: Bearer <token>".',
        ),
        { 'WWW-Authenticate': challenge },
      );
    }
    scope.caller = caller;
    return next();
  });

  app.get('/metrics', async (c) =>
    c.body(await metrics.registry.metrics(), 200, { 'Content-Type': metrics.registry.contentType }),
  );

  // Per-tenant concurrency. A legacy MCP session's GET stream (/mcp, /sse) lives as long as the session,
  // so it is bounded by the per-tenant session limit instead of holding a request slot.
  app.use('*', async (c, next) => {
    if (c.req.method === 'GET' && (c.req.path === '/mcp' || c.req.path === '/sse')) return next();
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
      path === '/mcp' || path === SSE_MESSAGES_PATH ? MCP_BODY_LIMIT : bodyLimitFor(method, path),
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
  // A sandbox's published port, proxied (plain HTTP): same token and tenant scope as the API.
  app.all('/v1/sandboxes/:id/ports/:port{[0-9]+}/*', (c) => proxyToPort(c.req.raw, apiFor(callerOf())));
  app.all('/v1/sandboxes/:id/ports/:port{[0-9]+}', (c) => proxyToPort(c.req.raw, apiFor(callerOf())));
  mountApiRoutes(app, { admin: false, api: () => apiFor(callerOf()) });

  return {
    app: app as unknown as Hono,
    metrics,
    drain: (timeoutMs) => limiter.drained(timeoutMs),
    close: () => mcp.close(),
  };
}
