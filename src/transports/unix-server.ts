/**
 * Serve a Hono app on a Unix socket (the daemon's local API).
 *
 * Access control is the socket's file mode: 0660, owned by the daemon's user (root) and its group, so only
 * root and members of that group can drive the daemon. The socket is bound inside a fresh 0700 directory,
 * chmod'ed, and only then renamed into place: binding at the final path and chmod'ing afterwards would
 * leave a window in which any local user could connect (with the umask's mode) and keep that connection.
 *
 * Who is calling: with `peerOf`, each connection's peer credentials (SO_PEERCRED: the uid and pid of
 * the process that connected, as the kernel saw it) are read once at accept and handed to the app with
 * every request on that connection, as `env.peer` — the audit log's verified caller.
 */
import { mkdtempSync, renameSync, rmdirSync, statSync, unlinkSync } from 'node:fs';
import { chmod, chown, lstat, unlink } from 'node:fs/promises';
import type { Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { createAdaptorServer } from '@hono/node-server';
import { ForkboxError } from '../domain/errors.ts';
import { maxConnections } from './http-server.ts';

export interface UnixServer {
  readonly socketPath: string;
  /** Stop accepting, finish in-flight requests (up to `graceMs`), then drop the rest and remove the socket. */
  close(graceMs?: number): Promise<void>;
}

export interface ServeUnixOptions {
  /** File mode of the socket; default 0o660. */
  mode?: number;
  /** Group owning the socket (e.g. a `forkbox` group); default: the daemon's group. */
  gid?: number;
  /** Connections held at most (default FORKBOX_MAX_CONNECTIONS, else 1024). */
  maxConnections?: number;
  /** The peer credentials of a connected socket (SO_PEERCRED); throws when they cannot be read. */
  peerOf?: (socket: Socket) => PeerCredentials;
}

export interface PeerCredentials {
  pid: number;
  uid: number;
  gid: number;
}

/** What the app's `fetch` gets as `env` on this server (beside @hono/node-server's own fields). */
export interface UnixEnv {
  incoming?: { socket?: Socket };
  /** Absent when no `peerOf` was given or the credentials could not be read. */
  peer?: PeerCredentials;
}

interface FetchApp {
  fetch: (request: Request, env?: unknown) => Response | Promise<Response>;
}

/** Linux sun_path holds 108 bytes including the NUL. */
const MAX_SOCKET_PATH = 107;

function probe(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Remove a socket file left by a daemon that died; refuse if someone still answers on it or it is not a socket. */
async function removeStale(path: string): Promise<void> {
  let st: Awaited<ReturnType<typeof lstat>>;
  try {
    st = await lstat(path);
  } catch {
    return;
  }
  if (!st.isSocket()) {
    throw new ForkboxError(
      'conflict',
      `${path} exists and is not a socket. Move it away, then start the daemon again.`,
      { path },
    );
  }
  if (await probe(path)) {
    throw new ForkboxError(
      'conflict',
      `another process already serves ${path}. Stop it first (is 'forkbox serve' running?).`,
      {
        path,
      },
    );
  }
  await unlink(path);
}

export async function serveUnix(
  app: FetchApp,
  socketPath: string,
  opts: ServeUnixOptions = {},
): Promise<UnixServer> {
  await removeStale(socketPath);
  const dir = dirname(socketPath);
  // mkdtemp creates the directory with mode 0700: nobody but us can reach the socket until it is renamed.
  const tmpDir = mkdtempSync(join(dir, '.sock-'));
  const tmpPath = join(tmpDir, 's');
  if (Buffer.byteLength(tmpPath) > MAX_SOCKET_PATH || Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) {
    rmdirSync(tmpDir);
    throw new ForkboxError(
      'invalid_argument',
      `socket path ${socketPath} is too long for a Unix socket (limit ~100 bytes). Use a shorter --state-dir.`,
      { path: socketPath },
    );
  }

  const peers = new WeakMap<Socket, PeerCredentials>();
  const fetch = (req: Request, env: UnixEnv) => {
    const socket = env?.incoming?.socket;
    const peer = socket === undefined ? undefined : peers.get(socket);
    return app.fetch(req, peer === undefined ? env : { ...env, peer });
  };
  const server = createAdaptorServer({ fetch: fetch as never }) as Server;
  const { peerOf } = opts;
  if (peerOf) {
    server.on('connection', (socket: Socket) => {
      try {
        peers.set(socket, peerOf(socket));
      } catch {
        // Left without credentials: the request is still served, and audited without a uid.
      }
    });
  }
  // Clients keep connections alive between calls; closing idle ones after Node's default 5 s makes a
  // client that reuses one at that moment see a reset. A minute covers a CLI session's pauses.
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 30_000;
  // Bound what clients can hold: every connection is a file descriptor of the daemon.
  server.maxConnections = opts.maxConnections ?? maxConnections();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(tmpPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
    await chmod(tmpPath, opts.mode ?? 0o660);
    if (opts.gid !== undefined) await chown(tmpPath, process.getuid?.() ?? 0, opts.gid);
    renameSync(tmpPath, socketPath);
  } catch (e) {
    server.close();
    try {
      unlinkSync(tmpPath);
    } catch {}
    throw e;
  } finally {
    try {
      rmdirSync(tmpDir);
    } catch {}
  }
  const ino = statSync(socketPath).ino;

  let closing: Promise<void> | undefined;
  return {
    socketPath,
    close(graceMs = 5000) {
      closing ??= new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        timer.unref();
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        // Keep-alive connections with no request in flight would hold close() open for nothing.
        server.closeIdleConnections();
      }).then(() => {
        // Remove the socket only if it is still ours (a new daemon may have replaced it).
        try {
          if (statSync(socketPath).ino === ino) unlinkSync(socketPath);
        } catch {}
      });
      return closing;
    },
  };
}
