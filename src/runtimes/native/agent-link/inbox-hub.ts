/**
 * The host ends of the agents' control sockets. Each template and sandbox has an inbox directory
 * (host root-owned, 0755) holding `ctl.sock`, on which the host listens and the sandbox's agent
 * connects. A connection is trusted only after its hello names the inbox's owner and the kernel's
 * SO_PEERCRED says the peer is the expected process: a parent sandbox can reach its children's sockets
 * through /proc/<pid>/root, so a hello alone proves nothing.
 *
 * Everything in a sandbox can connect to its socket, so the socket is bounded before anything is read:
 * a peer that cannot be the expected process (SO_PEERCRED, checked at accept) is closed at once, and an
 * inbox holds at most `maxConnections` connections of which at most `maxUnverified` have not yet said an
 * accepted hello. Refused connections are counted (RuntimeCounters → /metrics). A flood of connections
 * then costs the daemon one accept and one close each, never a file descriptor kept.
 */
import { chmodSync, rmSync } from 'node:fs';
import net from 'node:net';
import type { Logger } from '../../../domain/logger.ts';
import type { ControlRefusal, RuntimeCounters } from '../../../service/ports.ts';
import { type Sys, socketFd } from '../host/sys.ts';
import { type AgentHello, readHello } from './agent-connection.ts';

export interface PeerCred {
  pid: number;
  uid: number;
  gid: number;
}

export interface AgentArrival {
  socket: net.Socket;
  hello: AgentHello;
  cred: PeerCred;
}

export interface InboxOwner {
  /**
   * Whether this peer can be the owner's agent at all, from its credentials alone (before reading a byte):
   * null when it can, else why not (for the log).
   */
  admits?(cred: PeerCred): string | null;
  /** Throws (with a reason for the log) when this peer may not speak for the owner. */
  verify(hello: AgentHello, cred: PeerCred): void;
  /** A verified agent connected. The owner sends `welcome` once it has placed the process. */
  onAgent(arrival: AgentArrival): void;
  /** A hello naming this owner was refused (`verify` threw `reason`); the connection is closed. */
  refused?(reason: string, hello: AgentHello): void;
}

/** Connections one inbox may hold: an agent has one, two while it replaces a dropped one. */
export const MAX_INBOX_CONNECTIONS = 4;
/** Of those, connections that have not yet said an accepted hello. */
export const MAX_INBOX_UNVERIFIED = 2;

interface Entry {
  server: net.Server;
  owner: InboxOwner;
  path: string;
  open: Set<net.Socket>;
  unverified: number;
  /** Refusals not yet logged (one warning per burst, not one per connection). */
  quietRefusals: number;
  lastWarnAt: number;
}

export interface InboxHub {
  /** Listens on `socketPath` for the owner `id`; when already listening, only the owner is replaced. */
  listen(id: string, socketPath: string, owner: InboxOwner): Promise<void>;
  /** Whether the hub listens for `id`. */
  has(id: string): boolean;
  /** Connections an inbox holds now (verified or not). */
  connections(id: string): number;
  /** Stops listening for `id` and removes its socket file (its open connections stay). */
  close(id: string): void;
  /** Closes every inbox. */
  closeAll(): void;
}

export function createInboxHub(deps: {
  sys: Sys;
  log: Pick<Logger, 'info' | 'warn'>;
  helloTimeoutMs?: number;
  counters?: Pick<RuntimeCounters, 'controlConnectionRefused'>;
  maxConnections?: number;
  maxUnverified?: number;
}): InboxHub {
  const servers = new Map<string, Entry>();
  const helloTimeout = deps.helloTimeoutMs ?? 5000;
  const maxConnections = deps.maxConnections ?? MAX_INBOX_CONNECTIONS;
  const maxUnverified = deps.maxUnverified ?? MAX_INBOX_UNVERIFIED;

  function refuse(id: string, entry: Entry, socket: net.Socket, reason: ControlRefusal, why: string): void {
    socket.destroy();
    deps.counters?.controlConnectionRefused(reason);
    entry.quietRefusals += 1;
    const now = Date.now();
    if (now - entry.lastWarnAt >= 10_000) {
      deps.log.warn(
        { inbox: id, refused: entry.quietRefusals, reason, why },
        'control socket connection(s) refused',
      );
      entry.quietRefusals = 0;
      entry.lastWarnAt = now;
    }
  }

  /** Why a connection from `cred` is refused before anything is read, or null. */
  function whyRefuse(entry: Entry, cred: PeerCred): [ControlRefusal, string] | null {
    const notHim = entry.owner.admits?.(cred) ?? null;
    if (notHim !== null) return ['peer', notHim];
    if (entry.open.size >= maxConnections) return ['limit', `${entry.open.size} connections already`];
    if (entry.unverified >= maxUnverified)
      return ['limit', `${entry.unverified} connections still without a hello`];
    return null;
  }

  function accept(id: string, socket: net.Socket): void {
    const entry = servers.get(id);
    if (!entry) {
      socket.destroy();
      return;
    }
    let cred: PeerCred;
    try {
      cred = deps.sys.peerCred(socketFd(socket));
    } catch (e) {
      refuse(id, entry, socket, 'peer', `cannot read peer credentials: ${String(e)}`);
      return;
    }
    const why = whyRefuse(entry, cred);
    if (why !== null) {
      refuse(id, entry, socket, why[0], why[1]);
      return;
    }
    entry.open.add(socket);
    entry.unverified += 1;
    let counted = true;
    const verified = () => {
      if (counted) entry.unverified -= 1;
      counted = false;
    };
    socket.once('close', () => {
      verified();
      entry.open.delete(socket);
    });
    readHello(socket, helloTimeout).then(
      (hello) => {
        verified();
        try {
          entry.owner.verify(hello, cred);
        } catch (e) {
          const reason = e instanceof Error ? e.message : String(e);
          refuse(id, entry, socket, 'hello', reason);
          entry.owner.refused?.(reason, hello);
          return;
        }
        entry.owner.onAgent({ socket, hello, cred });
      },
      (e: unknown) => refuse(id, entry, socket, 'hello', `bad hello from pid ${cred.pid}: ${String(e)}`),
    );
  }

  return {
    /** Listen on `<inboxDir>/ctl.sock` for the owner `id` (replacing a stale socket file). */
    async listen(id: string, socketPath: string, owner: InboxOwner): Promise<void> {
      const old = servers.get(id);
      if (old) {
        old.owner = owner;
        return;
      }
      rmSync(socketPath, { force: true });
      // pauseOnConnect: nothing is read from a connection before its peer's credentials are checked.
      const server = net.createServer({ allowHalfOpen: false, pauseOnConnect: true }, (s) => accept(id, s));
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(socketPath, () => {
          server.off('error', reject);
          resolve();
        });
      });
      server.on('error', (e) => deps.log.warn({ inbox: id, err: String(e) }, 'control socket error'));
      // Sandbox root is an unprivileged host uid: it needs write permission on the socket to connect.
      // chmod by path is safe here: the inbox directory is host-root-owned 0755, so nothing in it can
      // have been replaced by a symlink from inside the sandbox.
      chmodSync(socketPath, 0o666);
      servers.set(id, {
        server,
        owner,
        path: socketPath,
        open: new Set(),
        unverified: 0,
        quietRefusals: 0,
        lastWarnAt: 0,
      });
    },

    has(id: string): boolean {
      return servers.has(id);
    },

    connections(id: string): number {
      return servers.get(id)?.open.size ?? 0;
    },

    close(id: string): void {
      const e = servers.get(id);
      if (!e) return;
      servers.delete(id);
      e.server.close();
      rmSync(e.path, { force: true });
    },

    closeAll(): void {
      for (const id of [...servers.keys()]) this.close(id);
    },
  };
}
