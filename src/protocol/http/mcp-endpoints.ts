/**
 * The MCP endpoints of the TCP listener: `/mcp` serves the toolsets chosen with `forkbox serve
 * --toolset`; `/mcp/<name>` serves that one toolset alone, made on its first request, each with its own
 * session table under the same per-tenant limits. Every API an MCP session gets is instrumented (HTTP
 * metrics, the audit line's error code) by the caller's `instrument`.
 */
import { ForkboxError } from '../../domain/errors.ts';
import type { ForkboxApi } from '../../service/api.ts';
import { createMcpHttp, type McpHttp, type McpHttpOptions } from '../mcp/http/http.ts';
import { TOOLSETS } from '../mcp/toolsets.ts';
import { EXEC_BODY_LIMIT } from '../rest/local-schemas.ts';
import type { HttpAppOptions } from './app.ts';

/** MCP bodies carry file contents and stdin inline (base64 in JSON): the sync-exec bound. */
export const MCP_BODY_LIMIT = EXEC_BODY_LIMIT;

export interface McpEndpoints {
  /** `/mcp` (and the legacy transports on it). */
  mcp: McpHttp;
  /** `/mcp/<name>`; not_found for a toolset that does not exist. */
  mcpFor(name: string): McpHttp;
  /** Close every endpoint's sessions. */
  close(): Promise<void>;
}

export function createMcpEndpoints(
  opts: Pick<HttpAppOptions, 'engine' | 'version' | 'log' | 'mcp' | 'toolsets'>,
  instrument: (api: ForkboxApi) => ForkboxApi,
): McpEndpoints {
  const base: Omit<McpHttpOptions, 'toolsets'> = {
    sessionApi: (tenant, session, namespaces) =>
      instrument(
        opts.engine.scoped({ tenant, session, remote: true, ...(namespaces ? { namespaces } : {}) }),
      ),
    attachSession: (id, o) => opts.engine.attachSession(id, o),
    version: opts.version,
    maxBodyBytes: MCP_BODY_LIMIT,
    ...(opts.log ? { log: opts.log } : {}),
    ...(opts.mcp?.sessionIdleMs !== undefined ? { sessionIdleMs: opts.mcp.sessionIdleMs } : {}),
    ...(opts.mcp?.maxSessionsPerTenant !== undefined
      ? { maxSessionsPerTenant: opts.mcp.maxSessionsPerTenant }
      : {}),
    ...(opts.mcp?.sessionGraceMs !== undefined ? { sessionGraceMs: opts.mcp.sessionGraceMs } : {}),
    ...(opts.mcp?.outputBytes !== undefined ? { outputBytes: opts.mcp.outputBytes } : {}),
    ...(opts.mcp?.fixtures ? { fixtures: true } : {}),
  };
  const mcp = createMcpHttp({ ...base, ...(opts.toolsets ? { toolsets: opts.toolsets } : {}) });
  const byToolset = new Map<string, McpHttp>();
  function mcpFor(name: string): McpHttp {
    if (!Object.hasOwn(TOOLSETS, name)) {
      throw new ForkboxError(
        'not_found',
        `no toolset '${name}' here. Toolsets: ${Object.keys(TOOLSETS)
          .map((n) => `/mcp/${n}`)
          .join(', ')}.`,
      );
    }
    let m = byToolset.get(name);
    if (!m) {
      m = createMcpHttp({ ...base, toolsets: [name] });
      byToolset.set(name, m);
    }
    return m;
  }
  return {
    mcp,
    mcpFor,
    close: async () => {
      await Promise.all([mcp, ...byToolset.values()].map((m) => m.close()));
    },
  };
}
