/** A client session with the daemon over its Unix socket (see DaemonClient.openSession). */
import { randomBytes } from 'node:crypto';
import { type ClientRequest, request } from 'node:http';
import { ForkboxError } from '../domain/errors.ts';
import { CLIENT_HEADER } from '../protocol/rest/wire.ts';

export interface ClientSession {
  readonly id: string;
  close(): void;
}

export interface OpenSessionOptions {
  /** Session id (8-64 of [A-Za-z0-9_-]); default a random one. The same id re-attaches a session. */
  id?: string;
  /** How long the session's sandboxes outlive this process (default: the daemon's). */
  graceMs?: number;
  /** This client's name for itself in the daemon's audit log (x-forkbox-client). */
  client?: string | undefined;
}

/**
 * Hold `POST /v1/sessions/<id>/attach` open for the life of the session. The first attach must
 * succeed; after that, a dropped connection (daemon restart) is re-attached with backoff, within the
 * daemon's re-attach window, so the session's sandboxes survive the restart.
 */
export function openSession(socketPath: string, opts: OpenSessionOptions = {}): Promise<ClientSession> {
  const id = opts.id ?? randomBytes(16).toString('hex');
  const query = opts.graceMs === undefined ? '' : `?grace_ms=${Math.max(0, Math.round(opts.graceMs))}`;
  let closed = false;
  let current: ClientRequest | null = null;
  const attach = (onFirst?: (e: Error | null) => void): void => {
    let firstDone = false;
    const first = (e: Error | null) => {
      if (!firstDone) {
        firstDone = true;
        onFirst?.(e);
      }
    };
    const retry = (delay: number) => {
      if (closed) return;
      const t = setTimeout(() => attach(), delay);
      t.unref();
    };
    const req = request(
      {
        socketPath,
        method: 'POST',
        path: `/v1/sessions/${id}/attach${query}`,
        agent: false,
        ...(opts.client === undefined ? {} : { headers: { [CLIENT_HEADER]: opts.client } }),
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          first(new ForkboxError('unavailable', `the daemon refused the session (HTTP ${res.statusCode}).`));
          return;
        }
        res.once('data', () => {
          // Attached: from now on the session must not keep a CLI process alive on its own.
          res.socket.unref();
          first(null);
        });
        res.on('data', () => undefined);
        res.on('close', () => {
          if (!firstDone) first(new ForkboxError('unavailable', 'the daemon closed the session at once.'));
          else retry(250);
        });
      },
    );
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (!firstDone) {
        first(
          new ForkboxError(
            'unavailable',
            `cannot open a session with the forkbox daemon on ${socketPath}: ${e.code ?? e.message}`,
          ),
        );
      } else retry(500);
    });
    req.end();
    current = req;
  };
  return new Promise((resolve, reject) => {
    attach((e) => {
      if (e) {
        closed = true;
        reject(e);
        return;
      }
      resolve({
        id,
        close() {
          closed = true;
          current?.destroy();
        },
      });
    });
  });
}
