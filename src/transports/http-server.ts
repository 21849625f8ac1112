/**
 * Serve a fetch-style app on TCP (`forkbox serve --listen HOST:PORT`), with graceful shutdown: stop
 * accepting, let in-flight requests finish (bounded), then drop what is left.
 *
 * Whether a host may be listened on (loopback without tokens only) is decided by the caller
 * (cli/commands/serve.ts, `checkListenSecurity`), not here: this module only moves bytes.
 */

import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { ForkboxError } from '../domain/errors.ts';

export interface FetchApp {
  fetch: (request: Request, ...rest: never[]) => Response | Promise<Response>;
}

export interface HttpServer {
  /** The bound address (the real port when 0 was asked). */
  readonly host: string;
  readonly port: number;
  /** `http://host:port` (IPv6 in brackets). */
  readonly url: string;
  /**
   * Stop accepting connections, wait for `drain` (in-flight requests) up to `graceMs`, then close every
   * connection that is left.
   */
  close(opts?: { graceMs?: number; drain?: (timeoutMs: number) => Promise<unknown> }): Promise<void>;
}

export const DEFAULT_LISTEN = '127.0.0.1:7777';

/** Connections a listener holds at most; past it new ones are closed at once (FORKBOX_MAX_CONNECTIONS). */
export const DEFAULT_MAX_CONNECTIONS = 1024;

/** The connection bound of the daemon's listeners: FORKBOX_MAX_CONNECTIONS, else the default. */
export function maxConnections(env: Record<string, string | undefined> = process.env): number {
  const raw = env.FORKBOX_MAX_CONNECTIONS;
  if (raw === undefined || raw === '') return DEFAULT_MAX_CONNECTIONS;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1_000_000) {
    throw new ForkboxError(
      'invalid_argument',
      `FORKBOX_MAX_CONNECTIONS must be a whole number from 1 to 1000000, not '${raw}'.`,
    );
  }
  return n;
}

/** Parse `HOST:PORT` (`[v6]:PORT` for IPv6). */
export function parseListen(value: string): { host: string; port: number } {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || !(port >= 0 && port <= 65535)) {
    throw new ForkboxError(
      'invalid_argument',
      `--listen '${value}' is not HOST:PORT. Examples: 127.0.0.1:7777, [::1]:7777, 0.0.0.0:7777 (needs --token-file).`,
    );
  }
  return { host: (m[1] ?? m[2]) as string, port };
}

export async function serveHttp(app: FetchApp, host: string, port: number): Promise<HttpServer> {
  const server = createAdaptorServer({ fetch: app.fetch as never }) as Server;
  // Clients reuse connections between calls; a minute covers an agent's pauses between tool calls.
  server.keepAliveTimeout = 60_000;
  // Bound slow-loris style header dribbling; long-running responses (exec, SSE) are not affected.
  server.headersTimeout = 30_000;
  server.requestTimeout = 0;
  // Bound what clients can hold: every connection is a file descriptor of the daemon (fd-budget.ts).
  server.maxConnections = maxConnections();
  await new Promise<void>((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException) =>
      reject(
        new ForkboxError(
          e.code === 'EADDRINUSE' ? 'conflict' : 'unavailable',
          e.code === 'EADDRINUSE'
            ? `${host}:${port} is already in use. Pick another port with --listen HOST:PORT.`
            : `cannot listen on ${host}:${port}: ${e.message}.`,
          { host, port },
        ),
      );
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const shown = addr.address.includes(':') ? `[${addr.address}]` : addr.address;
  let closing: Promise<void> | undefined;
  return {
    host: addr.address,
    port: addr.port,
    url: `http://${shown}:${addr.port}`,
    close({ graceMs = 30_000, drain } = {}) {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // Idle keep-alive connections would otherwise hold close() open; busy ones finish their request.
        server.closeIdleConnections();
        const idleSweep = setInterval(() => server.closeIdleConnections(), 100);
        const deadline = Date.now() + graceMs;
        const until = (ms: number) =>
          Promise.race([closed, new Promise((r) => setTimeout(r, Math.max(0, ms)).unref())]);
        try {
          if (drain) {
            await drain(graceMs);
            // A drained request may still be flushing its last bytes: give its connection a moment to go
            // idle (the sweep then closes it) before cutting whatever is left.
            await until(Math.min(2000, deadline - Date.now()));
          } else await until(graceMs);
        } finally {
          clearInterval(idleSweep);
        }
        server.closeAllConnections();
        await closed;
      })();
      return closing;
    },
  };
}
