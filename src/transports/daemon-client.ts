/**
 * ForkboxApi over the daemon's /v1 API: the local API (protocol/rest/local-app.ts) on its Unix socket,
 * or the same routes on the TCP listener of `forkbox serve --listen` given a base URL and a bearer
 * token (daemon-endpoint.ts). Errors come back as the same ForkboxError codes the engine threw;
 * streaming calls (exec output, image progress) read NDJSON (daemon-request.ts); the routes are in
 * daemon-api-calls.ts.
 *
 * Kept light on purpose: the CLI loads this on every command, so it imports no server code (routes,
 * schemas, Hono) — only node:http, the error catalog and the wire constants.
 */
import { ForkboxError } from '../domain/errors.ts';
import type { ForkboxApi } from '../service/api.ts';
import { browserCalls, catalogCalls, execCalls, fileCalls, sandboxCalls } from './daemon-api-calls.ts';
import {
  createTransport,
  type DaemonEndpoint,
  type EndpointTransport,
  parseDaemonUrl,
} from './daemon-endpoint.ts';
import { createRequester, type RequestScope } from './daemon-request.ts';
import type { ClientSession } from './daemon-session.ts';

export interface DaemonClient extends ForkboxApi {
  /** The socket path, or the base URL for a remote daemon (for messages). */
  readonly target: string;
  readonly endpoint: DaemonEndpoint;
  /** Is the daemon answering /healthz? Never throws. */
  health(timeoutMs?: number): Promise<boolean>;
  /** Drop idle keep-alive connections (of this client and every client derived from it). */
  close(): void;
  /**
   * Open a client session: it stays attached while this process holds it (re-attaching by itself
   * after a daemon restart). Sandboxes created through `withSession(id)` without `persistent: true`
   * are killed by the daemon shortly after the session ends (close(), process exit, crash).
   */
  openSession(): Promise<ClientSession>;
  /** This client, with every request acting in the session `id`. Sessions are socket-only. */
  withSession(id: string): DaemonClient;
  /**
   * This client, with every request aborted when `signal` fires: the request's connection is closed,
   * which the daemon sees as the caller leaving (an aborted exec is cancelled there). The aborted call
   * rejects with `signal.reason`.
   */
  withSignal(signal: AbortSignal): DaemonClient;
}

export type { ClientSession } from './daemon-session.ts';

export type DaemonClientOptions = (
  | { socketPath: string; session?: string }
  /** A remote daemon's TCP listener: `url` as for --url (http/https), `token` sent as a bearer token. */
  | { url: string | URL; token?: string | undefined }
) & {
  /** This client's name for itself in the daemon's audit log (a claim): `cli`, `mcp-stdio`. */
  client?: string | undefined;
};

const sessionsNeedSocket = (target: string) =>
  new ForkboxError(
    'invalid_argument',
    `client sessions are only served on the daemon's local socket, not over ${target}. Run 'forkbox mcp' on the daemon's host, or point an MCP client at ${target}/mcp.`,
  );

export function createDaemonClient(opts: DaemonClientOptions): DaemonClient {
  const endpoint: DaemonEndpoint =
    'socketPath' in opts
      ? { kind: 'socket', socketPath: opts.socketPath }
      : {
          kind: 'url',
          url: typeof opts.url === 'string' ? parseDaemonUrl(opts.url) : opts.url,
          token: opts.token,
        };
  const session = 'session' in opts ? opts.session : undefined;
  return clientOver(createTransport(endpoint), { session, client: opts.client });
}

/** A client on `transport` (shared with the clients derived from it) acting in `scope`. */
function clientOver(transport: EndpointTransport, scope: RequestScope): DaemonClient {
  const { endpoint } = transport;
  const rq = createRequester(transport, scope);
  return {
    target: transport.target,
    endpoint,
    async health(timeoutMs = 1000) {
      try {
        await rq.call({ method: 'GET', path: '/healthz', timeoutMs });
        return true;
      } catch {
        return false;
      }
    },
    close: () => transport.destroy(),
    async openSession() {
      if (endpoint.kind !== 'socket') throw sessionsNeedSocket(transport.target);
      // Loaded when used (forkbox mcp): a CLI command never opens a session.
      const { openSession } = await import('./daemon-session.ts');
      return openSession(endpoint.socketPath, { client: scope.client });
    },
    withSession(id) {
      if (endpoint.kind !== 'socket') throw sessionsNeedSocket(transport.target);
      return clientOver(transport, { ...scope, session: id });
    },
    withSignal: (signal) => clientOver(transport, { ...scope, signal }),
    ...sandboxCalls(rq),
    ...execCalls(rq),
    ...fileCalls(rq),
    ...catalogCalls(rq),
    ...browserCalls(rq),
  };
}
